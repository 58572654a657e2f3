package main

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"time"
)

// listenUnix listens on the Unix socket at path (memrl serve --unixsocket)
// with permissions perm. A socket file left there by a server that did not
// remove it (killed) is replaced, as Redis does, but only when nothing
// answers on it: a second server must not steal a live one's clients. A
// path that exists and is no socket is refused. The listener removes the
// file when it is closed.
//
// Clients on the machine reach the server without the TCP stack: through
// loopback TCP a reply's write(2) also runs the receiving side's protocol
// processing, a third of the server's overhead per request in
// bench/README.md "Per core through the server". A Unix socket counts as
// loopback for protected mode (no password needed); file permissions guard
// it instead.
func listenUnix(path string, perm os.FileMode) (net.Listener, error) {
	st, err := os.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, fmt.Errorf("--unixsocket %s: %w", path, err)
	case st.Mode().Type() != fs.ModeSocket:
		return nil, fmt.Errorf("--unixsocket %s: exists and is not a socket", path)
	default:
		if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
			c.Close()
			return nil, fmt.Errorf("--unixsocket %s: another server is listening on it", path)
		}
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("--unixsocket %s: removing the stale socket: %w", path, err)
		}
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("--unixsocket: %w", err)
	}
	// The socket is created with the umask's permissions; tighten (or
	// widen) them before the address is announced.
	if err := os.Chmod(path, perm); err != nil {
		ln.Close()
		return nil, fmt.Errorf("--unixsocket %s: %w", path, err)
	}
	return ln, nil
}
