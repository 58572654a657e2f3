package cluster

import (
	"context"
	"fmt"
	"io"
	"math/rand"
	"net"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/memrl/memrl/cluster"
)

// measureSharded starts shards × replicas nodes with `memrl cluster
// start`, puts one collection on each shard and has go-redis's
// ClusterClient reward memories of all of them (each reward goes to the
// leader of its collection's shard), one row per client count.
func measureSharded(out io.Writer, exe, dir string, shards, replicas int, ns []int, dur time.Duration, memories int) error {
	port, err := freeRange(shards * replicas)
	if err != nil {
		return err
	}
	cdir := filepath.Join(dir, "sharded")
	if o, err := exec.Command(exe, "cluster", "start", "--dir", cdir, "--shards", strconv.Itoa(shards),
		"--replicas", strconv.Itoa(replicas), "--port", strconv.Itoa(port), "--wait", "60s").CombinedOutput(); err != nil {
		return fmt.Errorf("memrl cluster start: %v\n%s", err, o)
	}
	defer exec.Command(exe, "cluster", "stop", "--dir", cdir).Run()
	ctx := context.Background()
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{"127.0.0.1:" + strconv.Itoa(port)}, PoolSize: 512})
	defer cc.Close()
	// One collection per shard: names whose slot the default map gives it.
	slots := cluster.DefaultSlots(shards)
	colls := make([]string, shards)
	for s := range colls {
		for j := 0; ; j++ {
			name := fmt.Sprintf("bench-%d-%d", s, j)
			if int(slots[cluster.HashSlot([]byte(name))]) == s {
				colls[s] = name
				break
			}
		}
		if err := cc.Do(ctx, "MEM.CREATE", colls[s], "DIM", 8).Err(); err != nil {
			return err
		}
	}
	per := memories / shards
	for _, coll := range colls {
		for i := 0; i < per; i += 500 {
			p := cc.Pipeline()
			for j := i; j < min(i+500, per); j++ {
				args := []any{"MEM.ADD", coll, "VALUES", 8}
				for k := 0; k < 8; k++ {
					args = append(args, rand.Float32()+0.01)
				}
				p.Do(ctx, append(args, "ID", j+1)...)
			}
			if _, err := p.Exec(ctx); err != nil {
				return fmt.Errorf("loading %s: %w", coll, err)
			}
		}
	}
	setup := fmt.Sprintf("%d shards x %d", shards, replicas)
	for _, n := range ns {
		rate, p50, p99, err := measureLoad(n, dur, func() func(rng *rand.Rand) error {
			return func(rng *rand.Rand) error {
				if rng == nil {
					return nil
				}
				return cc.Do(ctx, "MEM.REWARD", colls[rng.Intn(len(colls))], rng.Intn(3), rng.Intn(per)+1).Err()
			}
		})
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "%-22s %8d %12.0f %10.0f %10.0f\n", setup, n, rate, p50, p99)
	}
	return nil
}

// freeRange returns a port P such that P..P+n-1 and their raft ports
// (+10000) are free on loopback now.
func freeRange(n int) (int, error) {
	for try := 0; try < 200; try++ {
		p := 20000 + rand.Intn(25000)
		ok := true
		for i := 0; i < n && ok; i++ {
			for _, port := range []int{p + i, p + i + cluster.RaftPortOffset} {
				ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
				if err != nil {
					ok = false
					break
				}
				ln.Close()
			}
		}
		if ok {
			return p, nil
		}
	}
	return 0, fmt.Errorf("no free port range")
}
