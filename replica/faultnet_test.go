package replica

import (
	"errors"
	"io"
	"math/rand"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// faultNet is a fault-injecting network for raft's NetworkTransport: each
// node's StreamLayer (faultLayer) listens on loopback TCP and wraps the
// connections it dials, which carry both directions of every RPC it
// sends, so a fault checked on the dialing side covers requests and
// responses alike. Faults:
//
//   - partitions: a cut pair of nodes cannot dial each other, and their
//     open connections are closed at once (a blocked read returns);
//   - drops: each write fails with probability drop, closing its
//     connection (the RPC is lost; raft dials again and resends);
//   - delays: each write first sleeps a random time below delay;
//   - pauses: a write on a connection to or from a paused node blocks,
//     with no deadline, until the node is resumed or the connection is
//     closed: a peer stopped with SIGSTOP whose socket buffers are full.
type faultNet struct {
	mu     sync.Mutex // guards the fields below
	cut    map[[2]string]bool
	drop   float64
	delay  time.Duration
	rng    *rand.Rand
	conns  map[*faultConn]struct{}
	paused map[string]bool
	// wake is closed (and replaced) when a node is resumed.
	wake chan struct{}
	// blocked counts writes blocked by a pause right now.
	blocked int
}

func newFaultNet() *faultNet {
	return &faultNet{cut: map[[2]string]bool{}, conns: map[*faultConn]struct{}{}, rng: rand.New(rand.NewSource(1)),
		paused: map[string]bool{}, wake: make(chan struct{})}
}

// pause makes every write to or from addr block (see above).
func (fn *faultNet) pause(addr string) {
	fn.mu.Lock()
	fn.paused[addr] = true
	fn.mu.Unlock()
}

// resume ends addr's pause.
func (fn *faultNet) resume(addr string) {
	fn.mu.Lock()
	delete(fn.paused, addr)
	close(fn.wake)
	fn.wake = make(chan struct{})
	fn.mu.Unlock()
}

// blockedWrites returns how many writes a pause blocks right now.
func (fn *faultNet) blockedWrites() int {
	fn.mu.Lock()
	defer fn.mu.Unlock()
	return fn.blocked
}

// waitPause blocks while a or b is paused; false means c was closed.
func (fn *faultNet) waitPause(c *faultConn) bool {
	fn.mu.Lock()
	counted := false
	defer func() {
		if counted {
			fn.blocked--
		}
		fn.mu.Unlock()
	}()
	for fn.paused[c.a] || fn.paused[c.b] {
		if !counted {
			fn.blocked++
			counted = true
		}
		wake := fn.wake
		fn.mu.Unlock()
		select {
		case <-wake:
		case <-c.closed:
			fn.mu.Lock()
			return false
		}
		fn.mu.Lock()
	}
	return true
}

func pair(a, b string) [2]string {
	if a > b {
		a, b = b, a
	}
	return [2]string{a, b}
}

// isolate cuts addr from every other address in all.
func (fn *faultNet) isolate(addr string, all []string) {
	fn.mu.Lock()
	defer fn.mu.Unlock()
	for _, o := range all {
		if o != addr {
			fn.cut[pair(addr, o)] = true
		}
	}
	for c := range fn.conns {
		if fn.cut[pair(c.a, c.b)] {
			c.Conn.Close()
		}
	}
}

// setNoise sets the drop probability and the delay bound.
func (fn *faultNet) setNoise(drop float64, delay time.Duration) {
	fn.mu.Lock()
	fn.drop, fn.delay = drop, delay
	fn.mu.Unlock()
}

// heal removes every fault.
func (fn *faultNet) heal() {
	fn.mu.Lock()
	fn.cut = map[[2]string]bool{}
	fn.drop, fn.delay = 0, 0
	fn.mu.Unlock()
}

// fault decides what happens to a write on a connection from a to b.
func (fn *faultNet) fault(a, b string) (cut, drop bool, delay time.Duration) {
	fn.mu.Lock()
	defer fn.mu.Unlock()
	if fn.cut[pair(a, b)] {
		return true, false, 0
	}
	if fn.drop > 0 && fn.rng.Float64() < fn.drop {
		return false, true, 0
	}
	if fn.delay > 0 {
		delay = time.Duration(fn.rng.Int63n(int64(fn.delay)))
	}
	return false, false, delay
}

var errFault = errors.New("faultnet: injected failure")

// faultLayer is one node's StreamLayer.
type faultLayer struct {
	net.Listener
	fn   *faultNet
	self string
}

// transport returns a NetworkTransport on a new faultLayer.
func (fn *faultNet) transport() (*raft.NetworkTransport, error) {
	l, err := fn.layer()
	if err != nil {
		return nil, err
	}
	return raft.NewNetworkTransport(l, 3, 2*time.Second, io.Discard), nil
}

// layer returns a new faultLayer listening on loopback.
func (fn *faultNet) layer() (raft.StreamLayer, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	return &faultLayer{Listener: ln, fn: fn, self: ln.Addr().String()}, nil
}

func (l *faultLayer) Dial(addr raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	if cut, _, _ := l.fn.fault(l.self, string(addr)); cut {
		return nil, errFault
	}
	c, err := net.DialTimeout("tcp", string(addr), timeout)
	if err != nil {
		return nil, err
	}
	fc := &faultConn{Conn: c, fn: l.fn, a: l.self, b: string(addr), closed: make(chan struct{})}
	l.fn.mu.Lock()
	l.fn.conns[fc] = struct{}{}
	l.fn.mu.Unlock()
	return fc, nil
}

// faultConn is a dialed connection from a to b.
type faultConn struct {
	net.Conn
	fn     *faultNet
	a, b   string
	closed chan struct{} // closed by Close
	once   sync.Once
}

func (c *faultConn) Write(p []byte) (int, error) {
	if !c.fn.waitPause(c) {
		return 0, net.ErrClosed
	}
	cut, drop, delay := c.fn.fault(c.a, c.b)
	if cut || drop {
		c.Close()
		return 0, errFault
	}
	if delay > 0 {
		time.Sleep(delay)
	}
	return c.Conn.Write(p)
}

func (c *faultConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.fn.mu.Lock()
	cut := c.fn.cut[pair(c.a, c.b)]
	c.fn.mu.Unlock()
	if cut {
		c.Close()
		return 0, errFault
	}
	return n, err
}

func (c *faultConn) Close() error {
	c.fn.mu.Lock()
	delete(c.fn.conns, c)
	c.fn.mu.Unlock()
	c.once.Do(func() { close(c.closed) })
	return c.Conn.Close()
}
