//go:build !linux

package main

import "syscall"

// memberProcAttr: only Linux can tie a child's life to its parent's (Pdeathsig); elsewhere the
// members of --cluster-local outlive a parent killed outright.
func memberProcAttr() *syscall.SysProcAttr { return nil }
