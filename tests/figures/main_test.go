package scripts

import (
	"os"
	"testing"
)

// The tests read the files of scripts.
func TestMain(m *testing.M) {
	if err := os.Chdir("../../scripts"); err != nil {
		panic(err)
	}
	os.Exit(m.Run())
}
