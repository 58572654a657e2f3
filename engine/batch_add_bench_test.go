package engine

import "testing"

// BenchmarkAddBatch measures a batch add of 1000 128-d memories per
// operation (SyncNone: the file writes and the log append, not the fsync);
// ns/op / 1000 is the cost of one memory, to set beside BenchmarkAdd.
func BenchmarkAddBatch(b *testing.B) {
	c, _ := benchColl(b, 0, 128)
	reqs := batchReqs(1000, 128)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := c.AddBatch(reqs); err != nil {
			b.Fatal(err)
		}
	}
}
