package server

import (
	"errors"
	"fmt"
	"net"
	"strings"
)

// Protected mode.
//
// A server without users accepts every command from every client. On
// loopback only local programs reach it; on any other address the whole
// network does, which is never what an operator who forgot the password
// meant. So, as Redis's protected mode does, Serve refuses a listener that
// is not on loopback when no user is configured, unless
// Config.DisableProtectedMode says the exposure is deliberate (for
// example behind a firewall or inside a private network namespace).

// ErrProtectedMode is returned by Serve and ListenAndServe for a listener
// beyond loopback on a server without users and with protected mode on.
// Fix it by configuring a password (Config.Users), by listening on
// loopback, or by setting Config.DisableProtectedMode.
var ErrProtectedMode = errors.New("server: protected mode: refusing to serve a non-loopback address without a password")

// isLoopback reports whether every client of a listener on addr is on this
// machine: a TCP address in 127.0.0.0/8 or ::1, or a Unix socket. The
// unspecified address (0.0.0.0, ::, ":6390") is every interface, so it is
// not loopback.
func isLoopback(addr net.Addr) bool {
	switch a := addr.(type) {
	case *net.TCPAddr:
		return a.IP.IsLoopback()
	case *net.UnixAddr:
		return true
	}
	return false
}

// IsLoopbackHost reports whether host (a host name or address, IPv6 with or
// without brackets) names only this machine: "localhost", or an address in
// 127.0.0.0/8 or ::1. Any other name is not trusted to, whatever it
// resolves to today.
func IsLoopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}

// checkProtectedMode returns ErrProtectedMode (with the address) if ln may
// not be served.
func (s *Server) checkProtectedMode(ln net.Listener) error {
	if s.auth.required() || s.cfg.DisableProtectedMode || isLoopback(ln.Addr()) {
		return nil
	}
	return fmt.Errorf("%w (listening on %s)", ErrProtectedMode, ln.Addr())
}
