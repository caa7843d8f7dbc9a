//go:build unix

package main

import "syscall"

// fdLimit is the process's limit on open files (0 if unknown).
func fdLimit() uint64 {
	var r syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r) != nil {
		return 0
	}
	return uint64(r.Cur) //nolint:unconvert // an int64 on some platforms
}
