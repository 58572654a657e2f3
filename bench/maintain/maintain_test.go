package maintain

import (
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
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/memrl/memrl/bench/serverann"
	"github.com/memrl/memrl/engine"
	"github.com/memrl/memrl/server"
	"github.com/memrl/memrl/wal"
)

// inprocServer is the server run in the test's process (as in
// bench/serverann's test), so that the test needs no built binary.
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

func startInProcess(dir string) (serverann.Server, error) { return startInProcessWith(dir, nil) }

// startInProcessWith is startInProcess, calling register (if not nil) with
// the server before it serves.
func startInProcessWith(dir string, register func(*server.Server)) (serverann.Server, error) {
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
	if register != nil {
		register(srv)
	}
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

// writeFvecs writes the vectors of x (dimension dim) as a TEXMEX .fvecs file.
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

// TestRunMeasuresEveryStep drives the whole benchmark against a server in
// process on 3,000 byte-valued vectors (exact search: below the index's
// training size, so recall must be 1 wherever the ground truth is right):
// before, the snapshot, the prune of half (the count halves), the writers,
// compaction and rollback, each either measured or reported "not
// available" when the server does not know the command.
func TestRunMeasuresEveryStep(t *testing.T) {
	runSteps(t, startInProcess, true)
}

// TestRunWithMaintenanceCommands: the same run against a server that
// answers MEM.SNAPSHOT, MEM.COMPACT WAIT and MEM.ROLLBACK (stand-ins with
// the documented replies where the server does not have them yet, the
// real commands where it does): every step is measured, none skipped.
func TestRunWithMaintenanceCommands(t *testing.T) {
	stand := func(s *server.Server) {
		register := func(name string, fn server.HandlerFunc) {
			defer func() { recover() }() // the real command is there: keep it
			s.Register(name, 1, fn)
		}
		register("MEM.SNAPSHOT", func(c *server.Ctx, _ [][]byte) error { c.WriteOK(); return nil })
		register("MEM.ROLLBACK", func(c *server.Ctx, _ [][]byte) error { c.WriteInt(0); return nil })
		register("MEM.DELSNAPSHOT", func(c *server.Ctx, _ [][]byte) error { c.WriteInt(1); return nil })
		register("MEM.COMPACT", func(c *server.Ctx, _ [][]byte) error {
			c.WriteArrayHeader(10)
			for _, f := range []string{"rows_before", "3000", "rows_after", "1500", "bytes_before", "2", "bytes_after", "1", "seconds", "0.5"} {
				c.WriteBulkString(f)
			}
			return nil
		})
	}
	runSteps(t, func(dir string) (serverann.Server, error) { return startInProcessWith(dir, stand) }, false)
}

// runSteps runs the benchmark on start's server and checks every step;
// with mayLack, the maintenance commands may be missing (then reported
// "not available"), otherwise each must have been measured.
func runSteps(t *testing.T, start func(string) (serverann.Server, error), mayLack bool) {
	const n, nq, dim = 3000, 40, 16
	rng := rand.New(rand.NewSource(5))
	gen := func(k int) []float32 {
		x := make([]float32, k*dim)
		for i := range x {
			x[i] = float32(rng.Intn(256))
		}
		return x
	}
	dir := t.TempDir()
	cfg := Config{
		Base: filepath.Join(dir, "base.fvecs"), Query: filepath.Join(dir, "query.fvecs"),
		N: n, NQ: nq, RewardShare: 0.5, Collection: "m", Sync: "none",
		Clients: 2, Duration: 200 * time.Millisecond, WritersIdle: 300 * time.Millisecond, BuildWait: time.Minute,
		Seed: 1, JSON: filepath.Join(dir, "out.json"),
	}
	writeFvecs(t, cfg.Base, gen(n), dim)
	writeFvecs(t, cfg.Query, gen(nq), dim)
	var out bytes.Buffer
	rep, err := run(cfg, filepath.Join(dir, "work"), start, &out)
	t.Log(out.String())
	if err != nil {
		t.Fatal(err)
	}
	if rep.N != n || rep.Rewarded < n/3 || rep.Rewarded > 2*n/3 {
		t.Fatalf("n %d, rewarded %d", rep.N, rep.Rewarded)
	}
	steps := map[string]step{}
	for _, s := range rep.Steps {
		steps[strings.Fields(s.Step)[0]+" "+strings.Fields(s.Step + " x")[1]] = s
		if r := s.Retrieval; r != nil && (r.Recall10 < 0.999 || r.QPS1 <= 0 || r.QPSN <= 0) {
			t.Errorf("%s: recall %.4f, QPS %.0f and %.0f; want exact recall", s.Step, r.Recall10, r.QPS1, r.QPSN)
		}
	}
	before, pruned := steps["before x"], steps["after MEM.PRUNE"]
	if before.Memories != n || before.DiskBytes <= 0 || before.Retrieval == nil {
		t.Fatalf("before: %+v", before)
	}
	if pruned.Memories != n/2 || pruned.Note != fmt.Sprintf("pruned %d", n/2) || pruned.Seconds <= 0 {
		t.Fatalf("after the prune: %+v", pruned)
	}
	if w := rep.WritersIdle; !w.Available || w.Adds == 0 || w.Rewards == 0 || w.AddP99US < w.AddP50US {
		t.Fatalf("writers idle: %+v", w)
	}
	for _, name := range []string{"MEM.SNAPSHOT before-prune", "after MEM.COMPACT", "after MEM.ROLLBACK"} {
		s, ok := steps[name]
		if !ok {
			t.Fatalf("no %q step in %+v", name, rep.Steps)
		}
		if s.Retrieval == nil && s.Seconds == 0 && !(mayLack && strings.HasPrefix(s.Note, "not available: ")) {
			t.Errorf("%s: not measured: %+v", name, s)
		}
	}
	if !mayLack {
		if w := rep.WritersDuring; !w.Available || w.Adds == 0 || w.Rewards == 0 {
			t.Errorf("writers during compaction: %+v", w)
		}
		if c := steps["after MEM.COMPACT"]; c.Retrieval == nil || !strings.HasPrefix(c.Note, "rows ") {
			t.Errorf("after compaction: %+v", c)
		}
	}
	// The real rollback brings the count back; the stand-in changes nothing.
	if s := steps["after MEM.ROLLBACK"]; s.Retrieval != nil && mayLack && s.Memories != n {
		t.Errorf("after the rollback: %d memories, want %d", s.Memories, n)
	}
	for _, want := range []string{"| before | 3,000 |", "| after MEM.PRUNE MAXCOUNT 1500 | 1,500 |", "| idle ("} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the table has no %q", want)
		}
	}
	if b, err := os.ReadFile(cfg.JSON); err != nil || !bytes.Contains(b, []byte(`"step": "before"`)) {
		t.Errorf("JSON file: %v, %.200s", err, b)
	}
}

// TestExactTop10: the brute force agrees with a sort, ties to the lower id.
func TestExactTop10(t *testing.T) {
	rng := rand.New(rand.NewSource(2))
	vecs := map[int64][]float32{}
	var ids []int64
	for id := int64(1); id <= 5000; id++ {
		vecs[id] = []float32{float32(rng.Intn(8)), float32(rng.Intn(8))} // many ties
		ids = append(ids, id)
	}
	q := [][]float32{{3, 3}, {0, 7}}
	got := exactTop10(q, ids, func(id int64) []float32 { return vecs[id] })
	for qi := range q {
		var all top10
		for _, id := range ids {
			all = append(all, neighbour{sqDist(q[qi], vecs[id]), id})
		}
		// Selection by repeated minimum: the reference.
		for k := 0; k < 10; k++ {
			best := k
			for j := k + 1; j < len(all); j++ {
				if less(all[j], all[best]) {
					best = j
				}
			}
			all[k], all[best] = all[best], all[k]
			if got[qi][k] != all[k].id {
				t.Fatalf("query %d rank %d: %d, want %d", qi, k, got[qi][k], all[k].id)
			}
		}
	}
	if hits([]int64{1, 2, 3}, []int64{3, 4, 1}) != 2 {
		t.Fatal("hits")
	}
}
