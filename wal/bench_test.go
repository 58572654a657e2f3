package wal

import (
	"fmt"
	"testing"
)

// BenchmarkAppend measures Append throughput on the OS file system with
// parallel writers (b.SetParallelism(p) => p*GOMAXPROCS goroutines).
// Under SyncAlways it also reports records per fsync, the batching that
// group commit achieves.
//
//	go test -run '^$' -bench Append -benchtime 2s ./wal/
func BenchmarkAppend(b *testing.B) {
	for _, pol := range []SyncPolicy{SyncNone, SyncInterval, SyncAlways} {
		for _, size := range []int{64, 4096} {
			for _, par := range []int{1, 16} {
				name := fmt.Sprintf("%v/rec=%d/writers=%dxP", pol, size, par)
				b.Run(name, func(b *testing.B) {
					l, _, err := Open(Options{Dir: b.TempDir(), Sync: pol})
					if err != nil {
						b.Fatal(err)
					}
					rec := make([]byte, size)
					b.SetBytes(int64(size))
					b.SetParallelism(par)
					b.ResetTimer()
					b.RunParallel(func(pb *testing.PB) {
						for pb.Next() {
							if _, err := l.Append(rec); err != nil {
								b.Error(err)
								return
							}
						}
					})
					if err := l.Sync(); err != nil {
						b.Fatal(err)
					}
					b.StopTimer()
					st := l.Stats()
					if st.Syncs > 0 {
						b.ReportMetric(float64(st.Records)/float64(st.Syncs), "recs/fsync")
					}
					if err := l.Close(); err != nil {
						b.Fatal(err)
					}
				})
			}
		}
	}
}
