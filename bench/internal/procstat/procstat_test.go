package procstat

import (
	"os"
	"testing"
)

func TestReadSelf(t *testing.T) {
	s, err := Read(os.Getpid())
	if err == ErrUnsupported {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	if s.RSSKB <= 0 || s.Threads <= 0 || s.HWMKB < s.RSSKB {
		t.Errorf("implausible sample %+v", s)
	}
	// VmRSS is RssAnon + RssFile + RssShmem, each rounded by the kernel on its own.
	if s.AnonKB <= 0 || s.FileKB <= 0 || s.AnonKB+s.FileKB > s.RSSKB+8 {
		t.Errorf("anonymous %d and file %d KiB do not add up to at most the RSS %d KiB", s.AnonKB, s.FileKB, s.RSSKB)
	}
}

func TestReadMissing(t *testing.T) {
	if _, err := Read(1 << 30); err == nil {
		t.Error("reading a process that does not exist succeeded")
	}
}
