package examples

import (
	"os"
	"testing"
)

// The tests read the files of examples.
func TestMain(m *testing.M) {
	if err := os.Chdir("../../examples"); err != nil {
		panic(err)
	}
	os.Exit(m.Run())
}
