package replica

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"
)

// BenchmarkPipelinedAdds: 8 clients pipelining MEM.ADD of 16 dimensions
// at depth 32 to the leader of an in-process 3-node group (all nodes in
// this one process, on loopback TCP). b.N is the number of adds; see
// bench/replwrite for separate processes against a standalone node.
func BenchmarkPipelinedAdds(b *testing.B) {
	for _, depth := range []int{1, 4, 32} {
		b.Run(fmt.Sprintf("depth%d", depth), func(b *testing.B) {
			nodes := startGroup(b, 3)
			leader := waitLeader(b, nodes)
			ctx := context.Background()
			const clients = 8
			rdbs := make([]*redis.Client, clients)
			for i := range rdbs {
				rdbs[i] = redis.NewClient(&redis.Options{Addr: leader.addr, MaxRetries: -1, PoolSize: 1})
				defer rdbs[i].Close()
			}
			if err := rdbs[0].Do(ctx, "MEM.CREATE", "k", "DIM", 16).Err(); err != nil {
				b.Fatal(err)
			}
			args := []any{"MEM.ADD", "k", "VALUES", 16}
			for i := 0; i < 16; i++ {
				args = append(args, float64(i)/16)
			}
			b.ResetTimer()
			var wg sync.WaitGroup
			per := (b.N + clients - 1) / clients
			for c := 0; c < clients; c++ {
				wg.Add(1)
				go func(rdb *redis.Client) {
					defer wg.Done()
					for sent := 0; sent < per; {
						k := min(depth, per-sent)
						cmds, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
							for i := 0; i < k; i++ {
								p.Do(ctx, args...)
							}
							return nil
						})
						if err != nil {
							b.Error(err, cmds[0].Err())
							return
						}
						sent += k
					}
				}(rdbs[c])
			}
			wg.Wait()
			b.StopTimer()
			b.ReportMetric(float64(per*clients)/b.Elapsed().Seconds(), "adds/s")
		})
	}
}
