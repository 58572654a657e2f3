package replica

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
)

// Security says how a node's raft transport proves its peers (and itself
// to them): the cluster secret's handshake (handshake.go), mutual TLS, or
// both (TLS first, then the handshake inside it). A connection that fails
// either is closed before raft reads a byte of it: no term, no append, no
// vote, no TimeoutNow.
type Security struct {
	// Secret is the cluster secret every node of the cluster holds
	// (--cluster-secret); at least MinSecretLen bytes. Empty: no
	// handshake.
	Secret []byte
	// TLS, if set, wraps every raft connection in mutual TLS
	// (ClusterTLSConfig).
	TLS *ClusterTLS
	// AllowUnauthenticated lets a raft listener beyond loopback run with
	// neither Secret nor TLS (--protected-mode no). Without it such a
	// transport is refused (ErrRaftProtectedMode).
	AllowUnauthenticated bool
}

// enabled reports whether connections are authenticated at all.
func (s Security) enabled() bool { return len(s.Secret) > 0 || s.TLS != nil }

// ErrRaftProtectedMode refuses a raft listener beyond loopback whose peers
// are not authenticated: anyone who reaches it could write to the shard.
var ErrRaftProtectedMode = errors.New("replica: protected mode: refusing a raft port beyond loopback without a cluster secret or TLS")

// handshakeTimeout bounds a connection's TLS handshake and secret
// handshake together, at both ends.
const handshakeTimeout = 5 * time.Second

// maxPendingHandshakes bounds the connections in their handshake at once;
// more are closed at once, so that a flood of idle connections costs a
// bounded number of goroutines and cannot delay the accept loop.
const maxPendingHandshakes = 64

// secureStream is a raft.StreamLayer on TCP whose connections, both ways,
// are authenticated (Security) before raft sees them. Accept returns only
// connections that passed; the handshakes run on their own goroutines, so
// a peer that stalls its handshake delays nobody else.
type secureStream struct {
	ln        net.Listener
	advertise net.Addr
	sec       Security
	log       hclog.Logger

	conns   chan net.Conn // authenticated connections, handed to Accept
	pending chan struct{} // one token per handshake under way
	closed  chan struct{} // closed by Close
	once    sync.Once
	wg      sync.WaitGroup // the accept loop and the handshakes

	mu sync.Mutex // guards inflight, lastWarn and quiet
	// inflight are the accepted connections in their handshake, closed
	// by Close so that it need not wait for their deadlines.
	inflight map[net.Conn]struct{}
	// lastWarn is when a refused connection was last logged; quiet
	// counts those refused since without a line (warnRefused).
	lastWarn time.Time
	quiet    int
}

// warnEvery bounds the log lines of refused connections: whoever can
// reach the port must not be able to fill the disk with them.
const warnEvery = time.Second

// warnRefused logs a refused connection, at most once per warnEvery, with
// the number of those not logged since.
func (s *secureStream) warnRefused(msg string, remote net.Addr, err error) {
	s.mu.Lock()
	now := time.Now()
	if now.Sub(s.lastWarn) < warnEvery {
		s.quiet++
		s.mu.Unlock()
		return
	}
	quiet := s.quiet
	s.lastWarn, s.quiet = now, 0
	s.mu.Unlock()
	args := []any{"remote", remote.String()}
	if err != nil {
		args = append(args, "error", err)
	}
	if quiet > 0 {
		args = append(args, "not_logged_since", quiet)
	}
	s.log.Warn(msg, args...)
}

// NewTransport returns a raft transport listening on addr whose
// connections are authenticated by sec. It refuses (ErrRaftProtectedMode)
// an address beyond loopback when sec authenticates nothing and
// sec.AllowUnauthenticated is false. maxPool and timeout are
// raft.NewTCPTransport's. The caller closes the transport.
func NewTransport(addr string, sec Security, maxPool int, timeout time.Duration, logger hclog.Logger) (*raft.NetworkTransport, error) {
	s, err := newSecureStream(addr, sec, logger)
	if err != nil {
		return nil, err
	}
	return raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{Stream: s, MaxPool: maxPool, Timeout: timeout, Logger: s.log}), nil
}

// newSecureStream listens on addr and returns the stream layer of
// NewTransport (the same checks), for a node to wrap further (Open runs
// it under a closingStream).
func newSecureStream(addr string, sec Security, logger hclog.Logger) (*secureStream, error) {
	if len(sec.Secret) > 0 && len(sec.Secret) < MinSecretLen {
		return nil, ErrSecretTooShort
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	tcp, ok := ln.Addr().(*net.TCPAddr)
	switch {
	case !ok || tcp.IP.IsUnspecified():
		ln.Close()
		return nil, fmt.Errorf("replica: raft address %s is not one peers can dial (give a host's address, not all interfaces)", addr)
	case !sec.enabled() && !sec.AllowUnauthenticated && !tcp.IP.IsLoopback():
		ln.Close()
		return nil, fmt.Errorf("%w (raft on %s): set --cluster-secret or --cluster-tls-cert/--cluster-tls-key/--cluster-tls-ca on every node, or, on a network you trust, --protected-mode no", ErrRaftProtectedMode, addr)
	}
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	s := &secureStream{ln: ln, advertise: tcp, sec: sec, log: logger,
		conns: make(chan net.Conn), inflight: make(map[net.Conn]struct{}), pending: make(chan struct{}, maxPendingHandshakes), closed: make(chan struct{})}
	s.wg.Add(1)
	go s.acceptLoop()
	return s, nil
}

// ListenSecure is NewTransport with ListenTCP's pool and timeout, raft's
// messages to out (nil: discarded): for tests that need the address
// before Open.
func ListenSecure(addr string, sec Security, out io.Writer) (*raft.NetworkTransport, error) {
	if out == nil {
		out = io.Discard
	}
	return NewTransport(addr, sec, 3, 10*time.Second, hclog.New(&hclog.LoggerOptions{Name: "raft-net", Output: out}))
}

// acceptLoop accepts connections and starts their handshakes until Close.
func (s *secureStream) acceptLoop() {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			select {
			case <-s.closed:
				return
			default:
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			// EMFILE and the like: raft's own loop backs off too.
			s.log.Warn("raft transport: accept failed", "error", err)
			select {
			case <-s.closed:
				return
			case <-time.After(100 * time.Millisecond):
			}
			continue
		}
		select {
		case s.pending <- struct{}{}:
		default:
			s.warnRefused("raft transport: too many connections in their handshake; closing one", c.RemoteAddr(), nil)
			c.Close()
			continue
		}
		if !s.track(c) {
			<-s.pending
			return
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			ac, err := s.acceptConn(c)
			s.untrack(c)
			<-s.pending
			if err != nil {
				s.warnRefused("raft transport: refused a connection", c.RemoteAddr(), err)
				c.Close()
				return
			}
			select {
			case s.conns <- ac:
			case <-s.closed:
				ac.Close()
			}
		}()
	}
}

// track adds c to inflight; false (c closed) once Close has begun.
func (s *secureStream) track(c net.Conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.inflight == nil {
		c.Close()
		return false
	}
	s.inflight[c] = struct{}{}
	return true
}

func (s *secureStream) untrack(c net.Conn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.inflight, c)
}

// acceptConn authenticates an accepted connection (TLS, then the secret)
// within handshakeTimeout and returns what raft is to read.
func (s *secureStream) acceptConn(c net.Conn) (net.Conn, error) {
	c.SetDeadline(time.Now().Add(handshakeTimeout))
	if s.sec.TLS != nil {
		tc := tls.Server(c, s.sec.TLS.Server)
		if err := tc.HandshakeContext(context.Background()); err != nil {
			return nil, fmt.Errorf("TLS: %w", err)
		}
		c = tc
	}
	if len(s.sec.Secret) > 0 {
		if err := acceptHandshake(c, s.sec.Secret); err != nil {
			return nil, err
		}
	}
	c.SetDeadline(time.Time{}) // raft sets its own
	return c, nil
}

// Accept returns the next authenticated connection (net.Listener).
func (s *secureStream) Accept() (net.Conn, error) {
	select {
	case c := <-s.conns:
		return c, nil
	case <-s.closed:
		return nil, net.ErrClosed
	}
}

// Close stops accepting, closes the connections in their handshake and
// waits for their goroutines. Connections already handed to raft are
// raft's to close.
func (s *secureStream) Close() error {
	var err error
	s.once.Do(func() {
		close(s.closed)
		err = s.ln.Close()
		s.mu.Lock()
		for c := range s.inflight {
			c.Close()
		}
		s.inflight = nil
		s.mu.Unlock()
		s.wg.Wait()
	})
	return err
}

// Addr returns the address peers dial (net.Listener).
func (s *secureStream) Addr() net.Addr { return s.advertise }

// Dial connects to a peer and authenticates it, and this node to it, within
// timeout and handshakeTimeout (raft.StreamLayer).
func (s *secureStream) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	c, err := net.DialTimeout("tcp", string(address), timeout)
	if err != nil {
		return nil, err
	}
	hs := handshakeTimeout
	if timeout > 0 && timeout < hs {
		hs = timeout
	}
	c.SetDeadline(time.Now().Add(hs))
	if s.sec.TLS != nil {
		tc := tls.Client(c, s.sec.TLS.Client)
		if err := tc.HandshakeContext(context.Background()); err != nil {
			c.Close()
			return nil, fmt.Errorf("replica: raft TLS with %s: %w", address, err)
		}
		c = tc
	}
	if len(s.sec.Secret) > 0 {
		if err := dialHandshake(c, s.sec.Secret); err != nil {
			c.Close()
			return nil, fmt.Errorf("replica: raft connection to %s: %w", address, err)
		}
	}
	c.SetDeadline(time.Time{})
	return c, nil
}
