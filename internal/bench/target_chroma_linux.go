package bench

import "syscall"

// chromaProcAttr makes the private Chroma server die with this process.
func chromaProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
