//go:build !linux

package server

import "syscall"

// peerWatchSupported is false: a client's disconnection during a command
// is noticed only when the command ends (busy-timeout still applies).
const peerWatchSupported = false

func peerGone(syscall.RawConn) bool { return false }
