package embedded

import "syscall"

// physicalMemory is the machine's RAM in bytes, 0 when unknown.
func physicalMemory() int64 {
	var si syscall.Sysinfo_t
	if err := syscall.Sysinfo(&si); err != nil {
		return 0
	}
	return int64(si.Totalram) * int64(si.Unit)
}

// fileLimit is the process's open file limit (RLIMIT_NOFILE, which Go
// raises to the hard limit at start), 0 when unknown.
func fileLimit() int {
	var r syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r); err != nil || r.Cur > 1<<30 {
		return 0
	}
	return int(r.Cur)
}
