package server

import (
	"bufio"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"testing"
	"time"
)

// Shutdown lets an executing command finish and flush its reply (and the
// replies before it), closes idle connections at once, and makes Serve
// return ErrServerClosed.
func TestShutdownGraceful(t *testing.T) {
	started := make(chan struct{})
	release := make(chan struct{})
	s := mustNew(t, Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	s.Register("test.block", 0, func(c *Ctx, args [][]byte) error {
		close(started)
		<-release // e.g. waiting for an fsync
		c.WriteBulkString("done")
		return nil
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	serveErr := make(chan error, 1)
	go func() { serveErr <- s.Serve(ln) }()

	dial := func() (net.Conn, *bufio.Reader) {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		c.SetDeadline(time.Now().Add(10 * time.Second))
		br := bufio.NewReader(c)
		io.WriteString(c, "PING\r\n")
		if line, _ := br.ReadString('\n'); line != "+PONG\r\n" {
			t.Fatalf("handshake: %q", line)
		}
		return c, br
	}
	idle, idleR := dial()
	busy, busyR := dial()
	// PING and test.block pipelined; a third command queued behind them
	// must not run.
	io.WriteString(busy, "PING\r\ntest.block\r\nECHO never\r\n")
	<-started

	shutdownErr := make(chan error, 1)
	go func() { shutdownErr <- s.Shutdown(context.Background()) }()

	// The idle connection is closed promptly.
	if rest, err := io.ReadAll(idleR); err != nil || len(rest) != 0 {
		t.Fatalf("idle connection: %q, %v", rest, err)
	}
	_ = idle
	select {
	case err := <-shutdownErr:
		t.Fatalf("Shutdown returned %v while a command was executing", err)
	case <-time.After(50 * time.Millisecond):
	}
	// New connections are refused once the listener is closed.
	if c, err := net.DialTimeout("tcp", ln.Addr().String(), time.Second); err == nil {
		c.Close()
		t.Fatal("dial succeeded after Shutdown")
	}
	close(release)
	if err := <-shutdownErr; err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	rest, err := io.ReadAll(busyR)
	if err != nil || string(rest) != "+PONG\r\n$4\r\ndone\r\n" {
		t.Fatalf("busy connection got %q, %v", rest, err)
	}
	if err := <-serveErr; !errors.Is(err, ErrServerClosed) {
		t.Fatalf("Serve: %v", err)
	}
	if err := s.Serve(ln); !errors.Is(err, ErrServerClosed) {
		t.Fatalf("Serve after Shutdown: %v", err)
	}
	if err := s.Shutdown(context.Background()); err != nil {
		t.Fatalf("second Shutdown: %v", err)
	}
}

// When the deadline passes, Shutdown force-closes connections and cancels
// the handlers' contexts.
func TestShutdownDeadline(t *testing.T) {
	started := make(chan struct{})
	handlerDone := make(chan error, 1)
	s := mustNew(t, Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	s.Register("test.wait", 0, func(c *Ctx, args [][]byte) error {
		close(started)
		<-c.Context().Done()
		handlerDone <- c.Context().Err()
		return c.Context().Err()
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	serveErr := make(chan error, 1)
	go func() { serveErr <- s.Serve(ln) }()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "test.wait\r\n")
	<-started
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := s.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Shutdown = %v, want DeadlineExceeded", err)
	}
	if err := <-handlerDone; !errors.Is(err, context.Canceled) {
		t.Fatalf("handler context: %v", err)
	}
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.ReadAll(c); err != nil {
		t.Fatalf("connection not closed: %v", err)
	}
	if err := <-serveErr; !errors.Is(err, ErrServerClosed) {
		t.Fatalf("Serve: %v", err)
	}
}
