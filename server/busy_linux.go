package server

import (
	"syscall"

	"golang.org/x/sys/unix"
)

const peerWatchSupported = true

// peerGone reports whether the peer of the socket rc has hung up (or the
// socket failed), without reading: poll for POLLRDHUP, which input still
// waiting to be read does not hide.
func peerGone(rc syscall.RawConn) bool {
	gone := false
	rc.Control(func(fd uintptr) {
		p := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLRDHUP}}
		n, err := unix.Poll(p, 0)
		gone = err == nil && n > 0 && p[0].Revents&(unix.POLLRDHUP|unix.POLLHUP|unix.POLLERR) != 0
	})
	return gone
}
