package main

import "syscall"

// memberProcAttr makes a member of --cluster-local end with the process that started it: a
// parent killed outright (SIGKILL, the OOM killer) cannot stop its members, and they would
// otherwise serve on, orphaned, holding their ports.
func memberProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
}
