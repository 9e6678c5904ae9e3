package embedded

import (
	"os"
	"syscall"
)

const openDirectFlag = syscall.O_DIRECT

func fdatasync(f *os.File) error { return syscall.Fdatasync(int(f.Fd())) }
