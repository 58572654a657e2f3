// Command mretrieve measures MEM.MRETRIEVE through the server against the
// engine's batch retrieval in process, on the same data and cores (issue
// 29): --clients connections each sending MEM.MRETRIEVE of --batch
// queries, one command at a time, against Collection.RetrieveBatch on
// GOMAXPROCS threads in batches of each --inproc-batch size.
//
//	go build -o /tmp/memrl ./cmd/memrl
//	go run ./bench/mretrieve --bin /tmp/memrl --dir /tmp/mr \
//	    --base ../shared/data/sift1m-deb/base.bvecs --query ../shared/data/sift1m-deb/query.bvecs \
//	    --gt ../shared/data/sift1m-deb/groundtruth.ivecs
//
// The first run fills DIR/data in process (Collection.AddBatch, row r is
// memory id r; MEM.CREATE's defaults: IVF-PQ, shape from the size) and
// waits for the index builds to end; later runs on the same --dir reuse
// it. Then, --rounds times, alternating so that the machine's noise falls
// on both: the server (`BIN serve --dir DIR/data --sync none` on a
// loopback port) with the clients for --duration, then the same folder
// opened in process. Every query is MEM.RETRIEVE's K1 10 K2 10 LAMBDA 0
// (the index's defaults; phase 2 keeps phase 1's order); recall@10 is
// against the ground truth. The QPS of the server is queries answered a
// second (a command of B queries counts B); its CPU a query is the server
// process's (/proc/PID/stat). The in-process rows' CPU is this process's.
package main

import (
	"context"
	"encoding/binary"
	"flag"
	"fmt"
	"log"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/memrl/memrl/bench/ann"
	"github.com/memrl/memrl/bench/serverann"
	"github.com/memrl/memrl/engine"
	"github.com/memrl/memrl/wal"
)

const collName = "sift"

func main() {
	log.SetFlags(0)
	var (
		bin, dir, base, query, gt, inprocBatch string
		nbase, nq, clients, batch, rounds      int
		duration                               time.Duration
	)
	flag.StringVar(&bin, "bin", "", "memrl binary to run as the server (required)")
	flag.StringVar(&dir, "dir", "", "work folder; DIR/data is filled once and reused (required)")
	flag.StringVar(&base, "base", "", "base vectors (.bvecs/.fvecs); row r becomes memory id r")
	flag.StringVar(&query, "query", "", "query vectors")
	flag.StringVar(&gt, "gt", "", "ground truth (.ivecs, rows of base)")
	flag.IntVar(&nbase, "nbase", 0, "first N base vectors only (0: all; the ground truth must match)")
	flag.IntVar(&nq, "nq", 2000, "first N queries")
	flag.IntVar(&clients, "clients", 16, "server clients, each one MEM.MRETRIEVE at a time on its own connection")
	flag.IntVar(&batch, "batch", 64, "queries per MEM.MRETRIEVE")
	flag.StringVar(&inprocBatch, "inproc-batch", "64,2000", "in-process batch sizes, comma-separated")
	flag.IntVar(&rounds, "rounds", 2, "server / in-process alternations")
	flag.DurationVar(&duration, "duration", 10*time.Second, "length of each row")
	flag.Parse()
	if bin == "" || dir == "" || base == "" || query == "" || gt == "" {
		log.Fatal("need --bin, --dir, --base, --query and --gt")
	}
	if batch < 1 || batch > 1024 || clients < 1 || rounds < 1 || duration <= 0 {
		log.Fatal("--batch 1..1024; --clients, --rounds and --duration positive")
	}
	var ibs []int
	for _, f := range strings.Split(inprocBatch, ",") {
		b, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || b < 1 {
			log.Fatalf("--inproc-batch: %q", f)
		}
		ibs = append(ibs, b)
	}
	qs, _, _, err := ann.ReadVectors(query, nq)
	if err != nil {
		log.Fatal(err)
	}
	truth, err := ann.ReadIvecs(gt, nq)
	if err != nil {
		log.Fatal(err)
	}
	dim := len(qs) / len(truth)
	queries := make([][]float32, len(truth))
	for i := range queries {
		queries[i] = qs[i*dim : (i+1)*dim]
	}
	data := filepath.Join(dir, "data")
	if err := prepare(data, base, nbase, dim); err != nil {
		log.Fatal(err)
	}
	start := serverann.ExecStarter(bin, "none", 0, filepath.Join(dir, "server.log"))
	fmt.Printf("%d queries of dim %d; %d clients × MEM.MRETRIEVE of %d queries; in process: RetrieveBatch on %d threads; %s a row; GOMAXPROCS %d\n",
		len(queries), dim, clients, batch, runtime.GOMAXPROCS(0), duration, runtime.GOMAXPROCS(0))
	fmt.Println("| round | path | batch | threads/clients | queries | recall@10 | QPS | CPU / query |")
	fmt.Println("|---:|---|---:|---:|---:|---:|---:|---:|")
	for r := 1; r <= rounds; r++ {
		srv, err := start(data)
		if err != nil {
			log.Fatal(err)
		}
		row, err := throughServer(srv, queries, truth, clients, batch, duration)
		if serr := srv.Stop(); err == nil {
			err = serr
		}
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("| %d | server, MEM.MRETRIEVE | %d | %d | %s |\n", r, batch, clients, row)
		db, err := engine.Open(data, engine.Options{Sync: wal.SyncNone, CheckpointInterval: -1, Logf: func(string, ...any) {}})
		if err != nil {
			log.Fatal(err)
		}
		coll, err := db.Collection(collName)
		if err != nil {
			log.Fatal(err)
		}
		for _, b := range ibs {
			row, err := inProcess(coll, queries, truth, b, runtime.GOMAXPROCS(0), duration)
			if err != nil {
				log.Fatal(err)
			}
			fmt.Printf("| %d | in process, RetrieveBatch | %d | %d | %s |\n", r, b, runtime.GOMAXPROCS(0), row)
		}
		if err := db.Close(); err != nil {
			log.Fatal(err)
		}
	}
}

// retrieveOptions are the options of every query: MEM.RETRIEVE's K1 10
// K2 10 LAMBDA 0.
func retrieveOptions() engine.RetrieveOptions {
	opt := engine.NewRetrieveOptions()
	opt.K1, opt.K2, opt.Lambda = 10, 10, 0
	return opt
}

// prepare fills data with the base set unless it exists, and waits for
// the index builds to end.
func prepare(data, base string, nbase, dim int) error {
	if _, err := os.Stat(data); err == nil {
		fmt.Printf("reusing %s\n", data)
		return nil
	}
	x, n, d, err := ann.ReadVectors(base, nbase)
	if err != nil {
		return err
	}
	if d != dim {
		return fmt.Errorf("base dim %d, queries %d", d, dim)
	}
	db, err := engine.Open(data, engine.Options{Sync: wal.SyncNone, CheckpointInterval: -1, Logf: log.Printf})
	if err != nil {
		return err
	}
	cfg := engine.NewConfig(dim)
	cfg.Metric = engine.L2
	if err := db.Create(collName, cfg); err != nil {
		db.Close()
		return err
	}
	coll, _ := db.Collection(collName)
	t0 := time.Now()
	const step = 10000
	reqs := make([]engine.AddRequest, 0, step)
	for i := 0; i < n; i += step {
		reqs = reqs[:0]
		for r := i; r < min(n, i+step); r++ {
			reqs = append(reqs, engine.AddRequest{Vector: x[r*dim : (r+1)*dim], ID: uint64(r), HasID: true})
		}
		if _, err := coll.AddBatch(reqs); err != nil {
			db.Close()
			return err
		}
	}
	fmt.Printf("filled %d memories in %.1fs; waiting for the index builds\n", n, time.Since(t0).Seconds())
	deadline := time.Now().Add(time.Hour)
	for {
		st, err := coll.Stats()
		if err != nil {
			db.Close()
			return err
		}
		if !strings.HasSuffix(st.Index, "+building") {
			break
		}
		if time.Now().After(deadline) {
			db.Close()
			return fmt.Errorf("index builds still running after an hour")
		}
		time.Sleep(time.Second)
	}
	info, _ := coll.Info()
	fmt.Printf("index %s after %.1fs\n", info.Index, time.Since(t0).Seconds())
	return db.Close()
}

// tally sums a row's queries and hits.
type tally struct {
	queries, hits atomic.Int64
}

func (t *tally) add(ids []int64, truth []int32) {
	t.queries.Add(1)
	t.hits.Add(int64(recallHits(ids, truth)))
}

func recallHits(ids []int64, truth []int32) int {
	n := 0
	for _, id := range ids {
		for _, g := range truth[:10] {
			if int64(g) == id {
				n++
				break
			}
		}
	}
	return n
}

func (t *tally) row(d time.Duration, cpu time.Duration) string {
	q := t.queries.Load()
	return fmt.Sprintf("%d | %.3f | %.0f | %.0f µs", q, float64(t.hits.Load())/float64(10*q),
		float64(q)/d.Seconds(), float64(cpu.Microseconds())/float64(q))
}

// inProcess runs RetrieveBatch in batches of b on threads threads over
// the queries, round and round, for d.
func inProcess(coll *engine.Collection, queries [][]float32, truth [][]int32, b, threads int, d time.Duration) (string, error) {
	opt := retrieveOptions()
	b = min(b, len(queries))
	var t tally
	cpu0 := selfCPU()
	t0 := time.Now()
	for i := 0; time.Since(t0) < d; i = (i + b) % len(queries) {
		end := min(len(queries), i+b)
		res, err := coll.RetrieveBatch(context.Background(), queries[i:end], opt, threads)
		if err != nil {
			return "", err
		}
		for j, rs := range res {
			ids := make([]int64, len(rs))
			for k, r := range rs {
				ids[k] = int64(r.ID)
			}
			t.add(ids, truth[i+j])
		}
	}
	return t.row(time.Since(t0), selfCPU()-cpu0), nil
}

func selfCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// throughServer runs clients connections, each sending MEM.MRETRIEVE of
// batch queries (consecutive ones, from a different start per client)
// and reading its reply before the next, for d.
func throughServer(srv serverann.Server, queries [][]float32, truth [][]int32, clients, batch int, d time.Duration) (string, error) {
	head := [][]byte{[]byte("MEM.MRETRIEVE"), []byte(collName), []byte("K1"), []byte("10"), []byte("K2"), []byte("10"),
		[]byte("LAMBDA"), []byte("0"), []byte("QUERIES")}
	fp32 := []byte("FP32")
	blobs := make([][]byte, len(queries))
	for i, q := range queries {
		blobs[i] = make([]byte, 4*len(q))
		for j, x := range q {
			binary.LittleEndian.PutUint32(blobs[i][4*j:], math.Float32bits(x))
		}
	}
	var t tally
	cpu0, err := serverann.ProcCPU(srv.PID())
	if err != nil {
		return "", err
	}
	t0 := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cn, err := serverann.Dial(srv.Addr())
			if err != nil {
				errs <- err
				return
			}
			defer cn.Close()
			var ids []int64
			for i := (c * len(queries) / clients) % len(queries); time.Since(t0) < d; i = (i + batch) % len(queries) {
				n := min(batch, len(queries)-i)
				args := append(head[:len(head):len(head)], []byte(strconv.Itoa(n)))
				for _, b := range blobs[i : i+n] {
					args = append(args, fp32, b)
				}
				cn.SetDeadline(time.Now().Add(time.Minute))
				cn.Send(args...)
				v, err := readAfterFlush(cn)
				if err != nil {
					errs <- err
					return
				}
				lists, ok := v.([]any)
				if !ok || len(lists) != n {
					errs <- fmt.Errorf("MEM.MRETRIEVE of %d queries replied %T of %d", n, v, len(lists))
					return
				}
				for j, l := range lists {
					if ids, err = serverann.RetrievedIDs(l, ids[:0]); err != nil {
						errs <- err
						return
					}
					t.add(ids, truth[i+j])
				}
			}
		}()
	}
	wg.Wait()
	el := time.Since(t0)
	close(errs)
	if err := <-errs; err != nil {
		return "", err
	}
	cpu1, err := serverann.ProcCPU(srv.PID())
	if err != nil {
		return "", err
	}
	return t.row(el, cpu1-cpu0), nil
}

// readAfterFlush sends what cn buffered and reads one reply.
func readAfterFlush(cn *serverann.Conn) (any, error) {
	if err := cn.Flush(); err != nil {
		return nil, err
	}
	return cn.Read()
}
