// Package procstat reads a local process's memory, thread count and CPU time
// from Linux's /proc.
package procstat

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// ErrUnsupported is returned where /proc is not available.
var ErrUnsupported = errors.New("procstat: /proc not available")

// Sample is one reading of a process.
type Sample struct {
	RSSKB int64 // VmRSS, resident memory in KiB
	// AnonKB (RssAnon) is the part of RSSKB that is the process's own memory (heap, stacks);
	// FileKB (RssFile) the part that is mapped files, mostly the executable's pages, which are
	// clean and shared with every process mapping the same file. Both are 0 on kernels older
	// than 4.5, which do not report them.
	AnonKB  int64
	FileKB  int64
	HWMKB   int64         // VmHWM, peak resident memory in KiB
	Threads int64         // OS threads
	CPU     time.Duration // user + system time so far
}

// clockTick is USER_HZ, the unit of /proc/PID/stat times. It is 100 on every
// Linux architecture Go supports, and reading it needs sysconf (cgo).
const clockTick = 10 * time.Millisecond

// Read samples process pid.
func Read(pid int) (Sample, error) {
	var s Sample
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			if _, serr := os.Stat("/proc/self/status"); serr != nil {
				return s, ErrUnsupported
			}
		}
		return s, err
	}
	sc := bufio.NewScanner(bytes.NewReader(status))
	for sc.Scan() {
		key, val, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		fields := strings.Fields(val)
		if len(fields) == 0 {
			continue
		}
		n, err := strconv.ParseInt(fields[0], 10, 64)
		if err != nil {
			continue
		}
		switch key {
		case "VmRSS":
			s.RSSKB = n
		case "RssAnon":
			s.AnonKB = n
		case "RssFile":
			s.FileKB = n
		case "VmHWM":
			s.HWMKB = n
		case "Threads":
			s.Threads = n
		}
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return s, err
	}
	// The command name (field 2) may hold spaces; fields after it are
	// plain. utime and stime are fields 14 and 15.
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return s, fmt.Errorf("procstat: /proc/%d/stat: unexpected format", pid)
	}
	f := strings.Fields(string(stat[i+1:]))
	if len(f) < 13 {
		return s, fmt.Errorf("procstat: /proc/%d/stat: too few fields", pid)
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return s, fmt.Errorf("procstat: /proc/%d/stat: %w", pid, err)
	}
	s.CPU = time.Duration(ut+st) * clockTick
	return s, nil
}
