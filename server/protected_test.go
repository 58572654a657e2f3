package server

import (
	"errors"
	"net"
	"testing"
)

// TestProtectedMode is the hostile run's second finding: --addr
// 0.0.0.0:PORT served the world with no password and no warning.
func TestProtectedMode(t *testing.T) {
	listen := func(addr string) net.Listener {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		return ln
	}
	users := []User{{Name: DefaultUser, Password: "pw"}}
	for _, tc := range []struct {
		name    string
		cfg     Config
		addr    string
		refused bool
	}{
		{"every interface, no password", Config{}, "0.0.0.0:0", true},
		{"every interface, password", Config{Users: users}, "0.0.0.0:0", false},
		{"every interface, protected mode off", Config{DisableProtectedMode: true}, "0.0.0.0:0", false},
		{"loopback, no password", Config{}, "127.0.0.1:0", false},
		{"loopback 127.0.0.2, no password", Config{}, "127.0.0.2:0", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := mustNew(t, tc.cfg)
			done := make(chan error, 1)
			go func() { done <- s.Serve(listen(tc.addr)) }()
			if tc.refused {
				if err := <-done; !errors.Is(err, ErrProtectedMode) {
					t.Fatalf("Serve = %v, want ErrProtectedMode", err)
				}
				return
			}
			for s.Addr() == nil {
				select {
				case err := <-done:
					t.Fatalf("Serve returned %v", err)
				default:
				}
			}
			s.Shutdown(t.Context())
			if err := <-done; !errors.Is(err, ErrServerClosed) {
				t.Fatalf("Serve = %v", err)
			}
		})
	}
	for addr, want := range map[net.Addr]bool{
		&net.TCPAddr{IP: net.ParseIP("::1")}:      true,
		&net.TCPAddr{IP: net.ParseIP("::")}:       false,
		&net.TCPAddr{IP: net.ParseIP("10.1.2.3")}: false,
		&net.UnixAddr{Name: "/tmp/memrl.sock"}:    true,
	} {
		if isLoopback(addr) != want {
			t.Errorf("isLoopback(%v) = %v", addr, !want)
		}
	}
}

func TestIsLoopbackHost(t *testing.T) {
	for host, want := range map[string]bool{"localhost": true, "127.0.0.1": true, "127.1.2.3": true, "::1": true, "[::1]": true,
		"": false, "0.0.0.0": false, "::": false, "10.0.0.1": false, "evil.example": false, "localhost.evil.example": false} {
		if IsLoopbackHost(host) != want {
			t.Errorf("IsLoopbackHost(%q) = %v", host, !want)
		}
	}
}
