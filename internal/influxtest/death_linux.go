package influxtest

import (
	"os/exec"
	"syscall"
)

// setDeathSignal makes the kernel kill influxd when the test binary dies
// (a -timeout panic skips cleanups).
func setDeathSignal(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
