package client_test

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/memrl/memrl/client"
	"github.com/memrl/memrl/engine"
	"github.com/memrl/memrl/server"
)

// TestSentinelsMatchEngine keeps the client's sentinels true to the
// server's messages: each engine rule's text must be matched by the client
// sentinel for it, so renaming a message on the server fails here.
func TestSentinelsMatchEngine(t *testing.T) {
	for _, p := range []struct{ eng, cl error }{
		{engine.ErrCollectionExists, client.ErrCollectionExists},
		{engine.ErrNoCollection, client.ErrNoCollection},
		{engine.ErrBadName, client.ErrBadName},
		{engine.ErrDimension, client.ErrDimension},
		{engine.ErrBadVector, client.ErrBadVector},
		{engine.ErrBadNumber, client.ErrBadNumber},
		{engine.ErrBadParam, client.ErrBadParam},
		{engine.ErrIDExists, client.ErrIDExists},
		{engine.ErrNoMemory, client.ErrNoMemory},
		{engine.ErrPayloadTooLarge, client.ErrPayloadTooLarge},
		{engine.ErrBadAttrs, client.ErrBadAttrs},
		{engine.ErrBadKey, client.ErrBadKey},
		{engine.ErrKeyExists, client.ErrKeyExists},
		{engine.ErrKeyCollision, client.ErrKeyCollision},
		{engine.ErrCheckpointsStopped, client.ErrCheckpointsStopped},
		{engine.ErrTooManyOpenFiles, client.ErrTooManyOpenFiles},
		{engine.ErrTooManyCollections, client.ErrTooManyCollections},
		{engine.ErrCorrupt, client.ErrCorrupt},
	} {
		e := &client.Error{}
		err := client.ParseErrorForTest("ERR " + p.eng.Error() + ": detail")
		if !errors.Is(err, p.cl) || !errors.As(err, &e) {
			t.Errorf("the server's %q is not matched by client.%v", p.eng, p.cl)
		}
	}
}

// TestAuthErrors: NOAUTH, WRONGPASS and NOPERM replies from a server with
// users are typed.
func TestAuthErrors(t *testing.T) {
	addr := startTestServer(t, server.Config{Users: []server.User{
		{Name: "w", Password: "wpass"}, {Name: "r", Password: "rpass", ReadOnly: true},
	}})
	anon := newClient(t, addr)
	_, err := anon.List(ctx)
	wantIs(t, "List unauthenticated", err, client.ErrNoAuth)

	bad, _ := client.New(client.Options{Addr: addr, Username: "w", Password: "nope"})
	defer bad.Close()
	_, err = bad.List(ctx)
	wantIs(t, "List with a wrong password", err, client.ErrWrongPass)

	w, _ := client.New(client.Options{Addr: addr, Username: "w", Password: "wpass"})
	defer w.Close()
	if err := w.Create(ctx, "plans", 2, nil); err != nil {
		t.Fatal(err)
	}
	r, _ := client.New(client.Options{Addr: addr, Username: "r", Password: "rpass"})
	defer r.Close()
	if _, err := r.Retrieve(ctx, "plans", []float32{1, 0}, nil); err != nil {
		t.Fatalf("a read-only user's Retrieve: %v", err)
	}
	_, err = r.Add(ctx, "plans", []float32{1, 0}, nil)
	wantIs(t, "a read-only user's Add", err, client.ErrNoPerm)
	if in, _ := w.Info(ctx, "plans"); in.Count != 0 {
		t.Fatalf("a refused Add added: %+v", in)
	}
}

// TestServerLimitErrors: OOM and reply-size refusals are typed.
func TestServerLimitErrors(t *testing.T) {
	addr := startTestServer(t, server.Config{MaxMemory: 1 << 20, MaxReplyBytes: 1 << 10})
	c := newClient(t, addr)
	if err := c.Create(ctx, "plans", 2, nil); err != nil {
		t.Fatal(err)
	}
	_, err := c.Add(ctx, "plans", []float32{1, 0}, &client.AddOptions{Payload: make([]byte, 2<<20)})
	// The request was still arriving, so the server answers -OOM and
	// closes the connection (docs/PROTOCOL.md); go-redis, still writing
	// the request, may see the close first and return a network error
	// instead. Either way nothing is added. A command sent next on that
	// connection, before go-redis notices, fails with a network error.
	var ne *net.OpError
	if !errors.Is(err, client.ErrOOM) && !errors.As(err, &ne) {
		t.Fatalf("Add of 2 MiB with maxmemory 1 MiB: %v, want ErrOOM (or the close it comes with)", err)
	}
	if err := c.Ping(ctx); err != nil {
		var e *client.Error
		if errors.As(err, &e) {
			t.Fatalf("Ping after OOM: %v, want success or a network error", err)
		}
	}
	if in, err := c.Info(ctx, "plans"); err != nil || in.Count != 0 {
		t.Fatalf("after OOM Info = %+v, %v; want nothing added", in, err)
	}
	if _, err := c.Add(ctx, "plans", []float32{1, 0}, &client.AddOptions{Payload: make([]byte, 2<<10)}); err != nil {
		t.Fatal(err)
	}
	_, err = c.Retrieve(ctx, "plans", []float32{1, 0}, &client.RetrieveOptions{WithPayload: true})
	wantIs(t, "Retrieve of 2 KiB with max-reply-bytes 1 KiB", err, client.ErrReplyTooLarge)
	if _, err := c.Retrieve(ctx, "plans", []float32{1, 0}, nil); err != nil {
		t.Fatalf("the connection is not usable after a refusal: %v", err)
	}
}

// TestErrorIsRedisError: go-redis treats an *Error as a server reply.
func TestErrorIsRedisError(t *testing.T) {
	c := newClient(t, "")
	err := c.Drop(ctx, "nope")
	var re redis.Error
	if !errors.As(err, &re) || !strings.HasPrefix(re.Error(), "ERR no such collection") {
		t.Fatalf("Drop nope: %v is not a redis.Error", err)
	}
	// (go-redis's HasErrorPrefix strips "ERR " before comparing.)
	if !redis.HasErrorPrefix(err, "no such collection") {
		t.Fatalf("redis.HasErrorPrefix(%v, \"no such collection\") is false", err)
	}
}

// TestCorruptErrors: damage MEM.VERIFY and MEM.GET report is ErrCorrupt,
// whether the message starts with the rule or names the collection first.
func TestCorruptErrors(t *testing.T) {
	dir := t.TempDir()
	addr, stop, err := startServer(dir, server.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	c := newClient(t, addr)
	if err := c.Create(ctx, "v", 2, nil); err != nil {
		t.Fatal(err)
	}
	for i, p := range []string{"first", "second"} {
		if _, err := c.Add(ctx, "v", []float32{1, float32(i)}, &client.AddOptions{Payload: []byte(p)}); err != nil {
			t.Fatal(err)
		}
	}
	paths, _ := filepath.Glob(filepath.Join(dir, "collections", "*", "payloads.dat"))
	if len(paths) != 1 {
		t.Fatalf("payload files %v", paths)
	}
	f, err := os.OpenFile(paths[0], os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt([]byte("S"), int64(len("first")+8)) // memory 2's first byte (as server's TestMemVerify)
	f.Close()
	_, err = c.Verify(ctx, "v")
	wantIs(t, "Verify of a damaged collection", err, client.ErrCorrupt)
	_, err = c.Get(ctx, "v", client.ID(2), nil)
	wantIs(t, "Get of a damaged memory", err, client.ErrCorrupt)
	if m, err := c.Get(ctx, "v", client.ID(1), nil); err != nil || string(m.Payload) != "first" {
		t.Fatalf("Get of the undamaged memory = %+v, %v", m, err)
	}
}
