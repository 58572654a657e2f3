package serverann

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/memrl/memrl/bench/ann"
	"github.com/memrl/memrl/engine"
	"github.com/memrl/memrl/server"
	"github.com/memrl/memrl/wal"
)

// inprocServer is the server run in the test's process, so that the test
// needs no built binary; Stop closes it as SIGINT closes `memrl serve`.
type inprocServer struct {
	db   *engine.DB
	srv  *server.Server
	errc chan error
	mu   sync.Mutex // guards log
	log  bytes.Buffer
}

func (s *inprocServer) Addr() string { return s.srv.Addr().String() }
func (s *inprocServer) PID() int     { return os.Getpid() }

func (s *inprocServer) Log() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.log.String()
}

func (s *inprocServer) Stop() error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s.srv.Shutdown(ctx)
	<-s.errc
	return s.db.Close()
}

func startInProcess(dir string) (serverProc, error) {
	s := &inprocServer{errc: make(chan error, 1)}
	logf := func(format string, args ...any) {
		s.mu.Lock()
		fmt.Fprintf(&s.log, format+"\n", args...)
		s.mu.Unlock()
	}
	db, err := engine.Open(dir, engine.Options{Sync: wal.SyncNone, CheckpointInterval: -1, Logf: logf})
	if err != nil {
		return nil, err
	}
	srv, err := server.New(server.Config{Addr: "127.0.0.1:0", Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		db.Close()
		return nil, err
	}
	srv.RegisterMem(db)
	s.db, s.srv = db, srv
	go func() { s.errc <- srv.ListenAndServe() }()
	for srv.Addr() == nil {
		select {
		case err := <-s.errc:
			db.Close()
			return nil, err
		case <-time.After(5 * time.Millisecond):
		}
	}
	return s, nil
}

// writeFvecs writes n vectors of dim as a TEXMEX .fvecs file.
func writeFvecs(t *testing.T, path string, x []float32, dim int) {
	t.Helper()
	var b []byte
	for i := 0; i < len(x)/dim; i++ {
		b = binary.LittleEndian.AppendUint32(b, uint32(dim))
		for _, v := range x[i*dim : (i+1)*dim] {
			b = binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
		}
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestRunFillsMeasuresAndRestarts drives the whole benchmark against a
// server in process: 4,000 clustered vectors filled over the protocol into a
// collection that trains at 500 memories (and retrains at 2,000), then the
// rows idle, after the restart and in process. The restart must keep the
// index (same description, trained=…, no build logged), and every row must
// find the true neighbours (the index over 4,000 vectors at its default
// probes finds nearly all).
func TestRunFillsMeasuresAndRestarts(t *testing.T) {
	const n, nq, dim = 4000, 100, 16
	rng := rand.New(rand.NewSource(3))
	centres := make([]float32, 20*dim)
	for i := range centres {
		centres[i] = rng.Float32() * 20
	}
	gen := func(k int) []float32 {
		x := make([]float32, k*dim)
		for i := range k {
			c := rng.Intn(20)
			for j := range dim {
				x[i*dim+j] = centres[c*dim+j] + float32(rng.NormFloat64())
			}
		}
		return x
	}
	base, queries := gen(n), gen(nq)
	gt := make([][]int32, nq)
	for i := range nq {
		rows := make([]int32, n)
		d := make([]float64, n)
		for r := range n {
			rows[r] = int32(r)
			for j := range dim {
				e := float64(queries[i*dim+j] - base[r*dim+j])
				d[r] += e * e
			}
		}
		slices.SortFunc(rows, func(a, b int32) int {
			if d[a] != d[b] {
				if d[a] < d[b] {
					return -1
				}
				return 1
			}
			return int(a - b)
		})
		gt[i] = rows[:10]
	}
	dir := t.TempDir()
	cfg := Config{
		Base: filepath.Join(dir, "base.fvecs"), Query: filepath.Join(dir, "query.fvecs"), GT: filepath.Join(dir, "gt.ivecs"),
		Collection: "t", CreateArgs: []string{"TRAIN", "500"}, Sync: "none",
		FillConns: 3, Pipeline: 16, Clients: 3, Duration: 300 * time.Millisecond, Poll: 5 * time.Millisecond,
		JSON: filepath.Join(dir, "out.json"),
	}
	writeFvecs(t, cfg.Base, base, dim)
	writeFvecs(t, cfg.Query, queries, dim)
	if err := ann.WriteIvecs(cfg.GT, gt); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	rep, err := run(cfg, filepath.Join(dir, "work"), startInProcess, &out)
	t.Log(out.String())
	if err != nil {
		t.Fatal(err)
	}
	if rep.Memories != n || rep.FillRate <= 0 {
		t.Fatalf("filled %d memories at %.0f/s, want %d", rep.Memories, rep.FillRate, n)
	}
	if !strings.Contains(rep.IndexIdle, "trained=") || rep.IndexRestart != rep.IndexIdle || rep.IndexInProc != rep.IndexIdle {
		t.Fatalf("index idle %q, after restart %q, in process %q: want the same index throughout", rep.IndexIdle, rep.IndexRestart, rep.IndexInProc)
	}
	// Trained at 500 memories, due again at 4×: the retrain runs before
	// the idle rows, on at least 2,000 memories.
	var rows, trained int
	if _, err := fmt.Sscanf(rep.IndexIdle[strings.Index(rep.IndexIdle, "rows="):], "rows=%d trained=%d", &rows, &trained); err != nil || rows != n || trained < 2000 {
		t.Fatalf("index idle %q: want rows=4000 and trained on at least 2,000 (a retrain)", rep.IndexIdle)
	}
	if len(rep.RebuiltAfter) != 0 {
		t.Fatalf("builds after the restart: %q", rep.RebuiltAfter)
	}
	phases := map[string]int{}
	for _, m := range rep.Rows {
		phases[m.Phase]++
		if m.Queries == 0 {
			continue // a "during" row whose build ended before its first query
		}
		if m.Recall10 < 0.9 || m.QPS <= 0 || m.P50US <= 0 || m.P99US < m.P50US {
			t.Errorf("%s, %d clients: %d queries, recall %.3f, QPS %.0f, p50 %.0f µs, p99 %.0f µs", m.Phase, m.Clients, m.Queries, m.Recall10, m.QPS, m.P50US, m.P99US)
		}
	}
	for _, p := range []string{"idle", "after restart", "in process"} {
		if phases[p] != 2 {
			t.Errorf("%d rows of %q, want 2 (one client, several)", phases[p], p)
		}
	}
	if b, err := os.ReadFile(cfg.JSON); err != nil || !bytes.Contains(b, []byte(`"phase": "after restart"`)) {
		t.Errorf("JSON file: %v, %.200s", err, b)
	}
	if !strings.Contains(out.String(), "server (after restart") {
		t.Errorf("no server/in-process line in the report")
	}
}

// TestRespReplies: the minimal client reads every reply shape the
// benchmark meets, and error replies as errors.
func TestRespReplies(t *testing.T) {
	in := "+OK\r\n:42\r\n$3\r\nabc\r\n$-1\r\n*2\r\n*4\r\n:7\r\n$2\r\n-1\r\n$1\r\n0\r\n$2\r\n-1\r\n*1\r\n:9\r\n-ERR no such collection: \"x\"\r\n"
	c := &conn{r: bufioReader(in)}
	want := []any{"OK", int64(42), []byte("abc"), []byte(nil)}
	for _, w := range want {
		got, err := c.read()
		if err != nil || fmt.Sprint(got) != fmt.Sprint(w) {
			t.Fatalf("read %v, %v; want %v", got, err, w)
		}
	}
	got, err := c.read()
	if err != nil {
		t.Fatal(err)
	}
	ids, err := retrievedIDs(got, nil)
	if err != nil || !slices.Equal(ids, []int64{7, 9}) {
		t.Fatalf("retrievedIDs = %v, %v; want [7 9]", ids, err)
	}
	if _, err := c.read(); err == nil || !strings.Contains(err.Error(), "no such collection") {
		t.Fatalf("error reply read as %v", err)
	}
	if v, err := infoField([]byte("# Keyspace\r\ncoll_t:memories=3,index=ivfpq+building\r\n"), "coll_t"); err != nil || v != "memories=3,index=ivfpq+building" {
		t.Fatalf("infoField = %q, %v", v, err)
	}
}

func bufioReader(s string) *bufio.Reader { return bufio.NewReader(strings.NewReader(s)) }
