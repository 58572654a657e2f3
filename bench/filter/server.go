package filter

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/memrl/memrl/engine"
	"github.com/memrl/memrl/server"
)

// The protocol run (--server): the attribute collection served by an
// in-process server on a loopback port, queried with MEM.RETRIEVE coll
// FP32 <blob> K1 k K2 k LAMBDA 0 FILTER '.tenant == "tN"' by 1 and 4 go-redis
// clients, one command at a time each, for three tenant-size bands and
// unfiltered. Recall is checked against the exact filtered ground truth as
// in-process, so a wiring fault in the server shows.

// serverBands are the bands the protocol run measures: the smallest
// tenants (exact scan), the middle and the largest (index path).
var serverBands = []string{"<0.03%", "0.3-1%", ">=3%"}

// probe is one query of the protocol run with its answer.
type probe struct {
	blob  []byte
	expr  string // "" for unfiltered
	truth []uint32
}

// serverTable starts the server on db and measures each band with each
// client count.
func (b *bench) serverTable(w io.Writer, db *engine.DB) error {
	var clients []int
	for _, f := range strings.Split(b.cfg.clients, ",") {
		c, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || c < 1 || c > 64 {
			return fmt.Errorf("--clients: %q is not a count from 1 to 64", f)
		}
		clients = append(clients, c)
	}
	srv, err := server.New(server.Config{})
	if err != nil {
		return err
	}
	srv.RegisterMem(db)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	go srv.Serve(ln)
	defer srv.Shutdown(context.Background())
	rdb := redis.NewClient(&redis.Options{Addr: ln.Addr().String(), PoolSize: 64})
	defer rdb.Close()

	k := b.cfg.k
	rng := b.seeded(6)
	shares := tenantShares(b.cfg.tenants)
	nqAll := len(b.queries) / b.dim
	fmt.Fprintf(w, "protocol: MEM.RETRIEVE %s FP32 <blob> K1 %d K2 %d LAMBDA 0 FILTER '.tenant == \"tN\"' on an in-process server (127.0.0.1), %d queries per band and client count, each client one command at a time\n",
		b.name, k, k, b.cfg.nq)
	fmt.Fprintf(w, "%-10s %7s | %6s %9s %9s %9s\n", "band", "clients", "R", "QPS", "p50_us", "p99_us")
	rows := append(slices.Clone(serverBands), "unfiltered")
	for _, name := range rows {
		var members []int
		if name != "unfiltered" {
			i := slices.IndexFunc(bands, func(bd band) bool { return bd.name == name })
			if members = bandMembers(shares, bands[i]); len(members) == 0 {
				continue
			}
		}
		probes := make([]probe, b.cfg.nq)
		for i := range probes {
			qi := rng.Intn(nqAll)
			q := b.queries[qi*b.dim : (qi+1)*b.dim]
			p := &probes[i]
			p.blob = fp32Blob(q)
			if members == nil {
				p.truth = b.exactTop(q, k, nil, nil)
			} else {
				t := members[rng.Intn(len(members))]
				p.expr = tenantExpr(t)
				p.truth = b.exactTop(q, k, b.asg.tenant[t], nil)
			}
		}
		for _, nc := range clients {
			r, err := runProbes(rdb, b.name, k, probes, nc)
			if err != nil {
				return err
			}
			fmt.Fprintf(w, "%-10s %7d | %6.3f %9.0f %9.0f %9.0f\n", name, nc, r.recall, r.qps, r.p50, r.p99)
		}
	}
	return nil
}

// probeResult is one band's protocol figures.
type probeResult struct {
	recall, qps, p50, p99 float64 // p50 and p99 in microseconds
}

// runProbes sends every probe once, spread over nc clients each sending
// one command at a time, and measures recall, QPS over the wall time, and
// the latency percentiles.
func runProbes(rdb *redis.Client, coll string, k int, probes []probe, nc int) (probeResult, error) {
	ctx := context.Background()
	lat := make([]time.Duration, len(probes))
	hit := make([]int, len(probes))
	errs := make([]error, nc)
	var wg sync.WaitGroup
	start := time.Now()
	for c := range nc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := c; i < len(probes); i += nc {
				p := probes[i]
				args := []any{"MEM.RETRIEVE", coll, "FP32", p.blob, "K1", k, "K2", k, "LAMBDA", 0}
				if p.expr != "" {
					args = append(args, "FILTER", p.expr)
				}
				t0 := time.Now()
				reply, err := rdb.Do(ctx, args...).Slice()
				lat[i] = time.Since(t0)
				if err != nil {
					errs[c] = err
					return
				}
				got, err := replyRows(reply)
				if err != nil {
					errs[c] = err
					return
				}
				hit[i] = hits(got, p.truth)
			}
		}()
	}
	wg.Wait()
	wall := time.Since(start)
	for _, err := range errs {
		if err != nil {
			return probeResult{}, err
		}
	}
	total, h := 0, 0
	for i, p := range probes {
		total += len(p.truth)
		h += hit[i]
	}
	slices.Sort(lat)
	pct := func(f float64) float64 {
		return float64(lat[min(int(f*float64(len(lat))), len(lat)-1)].Microseconds())
	}
	return probeResult{
		recall: float64(h) / float64(max(total, 1)),
		qps:    float64(len(probes)) / wall.Seconds(),
		p50:    pct(0.50), p99: pct(0.99),
	}, nil
}

// replyRows reads the rows (id-1) out of a MEM.RETRIEVE reply: an array of
// [id, sim, q, score] arrays.
func replyRows(reply []any) ([]uint32, error) {
	rows := make([]uint32, 0, len(reply))
	for _, r := range reply {
		row, ok := r.([]any)
		if !ok || len(row) == 0 {
			return nil, fmt.Errorf("MEM.RETRIEVE reply row %v is not an array", r)
		}
		id, ok := row[0].(int64)
		if !ok || id < 1 {
			return nil, fmt.Errorf("MEM.RETRIEVE reply row %v: id is not a positive integer", row)
		}
		rows = append(rows, uint32(id-1))
	}
	return rows, nil
}

// fp32Blob is v as the protocol's FP32 blob: little-endian float32s.
func fp32Blob(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}
