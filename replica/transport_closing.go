package replica

import (
	"errors"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// Bounded shutdown (docs/CLUSTER.md "Shutdown"). hashicorp/raft's
// Shutdown waits for every goroutine of its own, and raft's
// NetworkTransport closes only its listener: a replication goroutine
// blocked writing to a peer that stopped reading (paused, or its network
// gone quiet) stays blocked until the connection's deadline, which for a
// snapshot is scaled by the snapshot's size (hours for a large one), and
// the main goroutine of a follower receiving a snapshot from such a peer
// reads with no deadline at all (compare hashicorp/raft issue 612). So a
// node runs its transport over a closingStream, which remembers every
// connection it dialed or accepted and closes them all when the node
// stops: every blocked read or write then returns at once.

// errStreamClosed refuses dials and accepts once a closingStream is shut.
var errStreamClosed = errors.New("replica: raft transport shut down")

// closingStream is a raft.StreamLayer that can close every connection it
// made or accepted.
type closingStream struct {
	raft.StreamLayer

	mu    sync.Mutex // guards conns and shut
	conns map[net.Conn]struct{}
	shut  bool
}

func newClosingStream(s raft.StreamLayer) *closingStream {
	return &closingStream{StreamLayer: s, conns: map[net.Conn]struct{}{}}
}

// Dial dials addr and tracks the connection.
func (s *closingStream) Dial(addr raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	c, err := s.StreamLayer.Dial(addr, timeout)
	if err != nil {
		return nil, err
	}
	return s.track(c)
}

// Accept accepts a connection and tracks it.
func (s *closingStream) Accept() (net.Conn, error) {
	c, err := s.StreamLayer.Accept()
	if err != nil {
		return nil, err
	}
	return s.track(c)
}

// track adds c to the set, or closes it if the stream is shut.
func (s *closingStream) track(c net.Conn) (net.Conn, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.shut {
		c.Close()
		return nil, errStreamClosed
	}
	tc := &trackedConn{Conn: c, s: s}
	s.conns[tc] = struct{}{}
	return tc, nil
}

// shutConns closes every tracked connection and makes later dials and
// accepts fail. The listener stays open (the transport closes it).
func (s *closingStream) shutConns() {
	s.mu.Lock()
	s.shut = true
	conns := s.conns
	s.conns = map[net.Conn]struct{}{}
	s.mu.Unlock()
	for c := range conns {
		c.(*trackedConn).Conn.Close()
	}
}

// trackedConn leaves its stream's set when closed.
type trackedConn struct {
	net.Conn
	s    *closingStream
	once sync.Once
}

func (c *trackedConn) Close() error {
	c.once.Do(func() {
		c.s.mu.Lock()
		delete(c.s.conns, c)
		c.s.mu.Unlock()
	})
	return c.Conn.Close()
}
