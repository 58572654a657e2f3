package serverann

// What other benchmarks that run `memrl serve` reuse (bench/maintain,
// bench/mretrieve).

import "time"

// Server is a running server: its address, its process id (for its CPU
// time), a clean stop (SIGINT) and its log so far.
type Server = serverProc

// ExecStarter returns a function that starts `bin serve --dir DIR --addr
// ADDR --sync syncName` on a free loopback port (GOMAXPROCS set when
// gomaxprocs > 0, the output appended to logPath) and returns once it
// listens.
func ExecStarter(bin, syncName string, gomaxprocs int, logPath string) func(dir string) (Server, error) {
	return execStarter(bin, syncName, gomaxprocs, "", logPath, "")
}

// WorkDir returns dir (created), or a new temporary folder and a function
// that removes it.
func WorkDir(dir string) (string, func(), error) { return workDir(dir) }

// ProcCPU returns the CPU time (user + system) process pid has used, from
// /proc/PID/stat.
func ProcCPU(pid int) (time.Duration, error) { return procCPU(pid) }

// Conn is the benchmark's minimal RESP2 client (resp.go), for load
// generators that must cost the shared cores little.
type Conn struct{ c *conn }

// Dial connects to addr.
func Dial(addr string) (*Conn, error) {
	c, err := dial(addr)
	if err != nil {
		return nil, err
	}
	return &Conn{c}, nil
}

// Send buffers one command; Flush sends what is buffered.
func (c *Conn) Send(args ...[]byte) { c.c.send(args...) }

// Flush sends the buffered commands.
func (c *Conn) Flush() error { return c.c.flush() }

// Read reads one reply: a string, int64, []byte, []any, or an error reply
// as the error.
func (c *Conn) Read() (any, error) { return c.c.read() }

// SetDeadline bounds the connection's reads and writes.
func (c *Conn) SetDeadline(t time.Time) error { return c.c.nc.SetDeadline(t) }

// Close closes the connection.
func (c *Conn) Close() error { return c.c.close() }

// RetrievedIDs appends the ids of a MEM.RETRIEVE reply (one element of a
// MEM.MRETRIEVE reply) to dst, best first.
func RetrievedIDs(reply any, dst []int64) ([]int64, error) { return retrievedIDs(reply, dst) }
