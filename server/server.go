package server

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Version is the server version reported by HELLO and INFO.
const Version = "0.1.0"

// Defaults for Config fields left zero.
const (
	// DefaultAddr is loopback-only on purpose: the server has no
	// authentication, so exposing it must be an explicit choice.
	DefaultAddr       = "127.0.0.1:6379"
	DefaultMaxClients = 10000
)

// Config configures a Server. The zero value is usable.
type Config struct {
	// Addr is the TCP address ListenAndServe listens on; default
	// DefaultAddr.
	Addr string
	// MaxClients bounds concurrent connections; a connection beyond it gets
	// "-ERR max number of clients reached" and is closed. Default
	// DefaultMaxClients.
	MaxClients int
	// Limits bounds each request (see Limits); zero fields take defaults.
	Limits Limits
	// Logger receives connection errors and handler panics; default
	// slog.Default().
	Logger *slog.Logger
}

// Server is a RESP2 TCP server that dispatches commands to registered
// handlers, one goroutine per connection. Create it with New, add commands
// with Register, then call Serve or ListenAndServe; stop it with Shutdown.
type Server struct {
	cfg   Config // defaults applied
	log   *slog.Logger
	start time.Time

	// cmds is replaced wholesale by Register (copy on write) so lookups on
	// the hot path take no lock. The map it points to is never modified.
	cmds atomic.Pointer[map[string]*command]

	// closing mirrors shutdown below for lock-free checks between commands.
	closing atomic.Bool
	nextID  atomic.Int64
	connWG  sync.WaitGroup // one count per live connection goroutine

	statConns    atomic.Int64 // connections accepted, ever
	statCmds     atomic.Int64 // commands read, ever
	statRejected atomic.Int64 // connections refused by MaxClients

	mu sync.Mutex // guards the fields below; also serialises Register
	// listeners being served; closed by Shutdown.
	listeners map[net.Listener]struct{}
	// firstAddr is the address of the first listener passed to Serve.
	firstAddr net.Addr
	// conns holds every live connection.
	// INVARIANT: a conn is in conns iff its goroutine holds a connWG count.
	conns map[*conn]struct{}
	// shutdown is set once by Shutdown; no connection is added after it.
	shutdown bool
	// info holds the INFO sections in the order added.
	info []infoSection

	obs observer // SLOWLOG, counters, extra CONFIG and metrics (stats.go)
}

// New returns a Server with the built-in commands (PING, ECHO, HELLO,
// COMMAND, QUIT, INFO, CLIENT, SELECT, CONFIG, AUTH, SLOWLOG) registered.
func New(cfg Config) *Server {
	if cfg.Addr == "" {
		cfg.Addr = DefaultAddr
	}
	if cfg.MaxClients <= 0 {
		cfg.MaxClients = DefaultMaxClients
	}
	cfg.Limits = cfg.Limits.withDefaults()
	s := &Server{
		cfg:       cfg,
		log:       cfg.Logger,
		start:     time.Now(),
		listeners: make(map[net.Listener]struct{}),
		conns:     make(map[*conn]struct{}),
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	empty := map[string]*command{}
	s.cmds.Store(&empty)
	s.registerBuiltins()
	return s
}

// ListenAndServe listens on cfg.Addr and serves until Shutdown, then
// returns ErrServerClosed.
func (s *Server) ListenAndServe() error {
	ln, err := net.Listen("tcp", s.cfg.Addr)
	if err != nil {
		return err
	}
	return s.Serve(ln)
}

// Addr returns the address of the first listener passed to Serve, or nil
// if Serve has not been called yet.
func (s *Server) Addr() net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.firstAddr
}

// Serve accepts connections on ln until Shutdown is called (it then returns
// ErrServerClosed) or ln fails permanently. It may be called for several
// listeners concurrently. Serve closes ln when it returns.
func (s *Server) Serve(ln net.Listener) error {
	s.mu.Lock()
	if s.shutdown {
		s.mu.Unlock()
		ln.Close()
		return ErrServerClosed
	}
	s.listeners[ln] = struct{}{}
	if s.firstAddr == nil {
		s.firstAddr = ln.Addr()
	}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.listeners, ln)
		s.mu.Unlock()
		ln.Close()
	}()

	var backoff time.Duration
	for {
		nc, err := ln.Accept()
		if err != nil {
			if s.closing.Load() {
				return ErrServerClosed
			}
			if errors.Is(err, net.ErrClosed) {
				return err
			}
			// Transient failures (EMFILE, ECONNABORTED, ...): back off
			// rather than spin, as net/http does.
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			s.log.Warn("server: accept failed; retrying", "err", err, "delay", backoff)
			time.Sleep(backoff)
			continue
		}
		backoff = 0
		s.accept(nc)
	}
}

// accept registers nc and starts its goroutine, or refuses it.
func (s *Server) accept(nc net.Conn) {
	s.mu.Lock()
	if s.shutdown {
		s.mu.Unlock()
		nc.Close()
		return
	}
	if len(s.conns) >= s.cfg.MaxClients {
		s.mu.Unlock()
		s.statRejected.Add(1)
		go func() { // never let a slow client stall the accept loop
			nc.SetWriteDeadline(time.Now().Add(time.Second))
			nc.Write([]byte("-ERR max number of clients reached\r\n"))
			nc.Close()
		}()
		return
	}
	c := newConn(s, nc)
	s.conns[c] = struct{}{}
	s.connWG.Add(1) // under mu and after the shutdown check: Shutdown's Wait cannot race it
	s.mu.Unlock()
	s.statConns.Add(1)
	go c.serve()
}

// removeConn forgets c; called by c's goroutine as it exits.
func (s *Server) removeConn(c *conn) {
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
	s.connWG.Done()
}

// Shutdown stops the server gracefully: it closes the listeners, lets every
// command that is executing finish and its replies (and those of earlier
// pipelined commands) be flushed, and closes each connection at its next
// command boundary. Commands received but not yet started are not run.
// Idle connections are closed at once.
//
// If ctx ends first, Shutdown closes the remaining connections forcibly,
// cancels their contexts (see Ctx.Context) and returns ctx.Err(). Serve
// returns ErrServerClosed. Calling Shutdown more than once is harmless.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.shutdown = true
	s.closing.Store(true)
	for ln := range s.listeners {
		ln.Close()
	}
	for c := range s.conns {
		c.interrupt()
	}
	s.mu.Unlock()

	done := make(chan struct{})
	go func() {
		s.connWG.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
	}
	s.mu.Lock()
	for c := range s.conns {
		c.forceClose()
	}
	s.mu.Unlock()
	return ctx.Err()
}

// clientCount returns the number of live connections.
func (s *Server) clientCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns)
}
