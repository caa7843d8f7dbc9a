//go:build !linux

package httpserve

import (
	"errors"
	"time"
)

// poller: without epoll, streams are not detached; newHub returns nil and nothing else here
// is called.
type poller struct{}

func newPoller(*hub) (*poller, error) {
	return nil, errors.New("streams are detached on Linux only")
}

func (*poller) prepare(*wireStream) bool               { return false }
func (*poller) add(*wireStream) error                  { return errors.New("unsupported") }
func (*poller) remove(*wireStream)                     {}
func (*poller) write(*wireStream, []byte) (int, error) { return 0, errors.New("unsupported") }
func (*poller) wait(time.Duration)                     {}
func (*poller) wake()                                  {}
func (*poller) close()                                 {}
