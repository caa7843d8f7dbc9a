//go:build !unix

package main

// fdLimit is the process's limit on open files: unknown here.
func fdLimit() uint64 { return 0 }
