package client_test

import (
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/memrl/memrl/client"
)

// BenchmarkRetrieve compares a typed Retrieve (K2 10, WITHPAYLOAD) with
// the same command through go-redis's Do and no parsing, to show what the
// typed layer costs on top of the round trip.
func BenchmarkRetrieve(b *testing.B) {
	c := newClient(b, "")
	name := "bench_retrieve"
	c.Drop(ctx, name)
	if err := c.Create(ctx, name, 32, &client.CreateOptions{Index: client.Flat}); err != nil {
		b.Fatal(err)
	}
	var items []client.AddItem
	for i := range 1000 {
		v := make([]float32, 32)
		v[i%32] = 1
		v[(i/32)%32] += float32(i % 5)
		items = append(items, client.AddItem{Vector: v, AddOptions: client.AddOptions{Payload: make([]byte, 64)}})
	}
	if _, err := c.MAdd(ctx, name, items); err != nil {
		b.Fatal(err)
	}
	q := items[3].Vector
	b.Run("typed", func(b *testing.B) {
		opt := &client.RetrieveOptions{K1: 20, K2: 10, WithPayload: true}
		for b.Loop() {
			if rs, err := c.Retrieve(ctx, name, q, opt); err != nil || len(rs) != 10 {
				b.Fatal(len(rs), err)
			}
		}
	})
	b.Run("raw", func(b *testing.B) {
		rdb := redis.NewClient(&redis.Options{Addr: testAddr, Protocol: 2})
		defer rdb.Close()
		blob := client.EncodeFP32(q)
		for b.Loop() {
			if err := rdb.Do(ctx, "MEM.RETRIEVE", name, "FP32", blob, "K1", 20, "K2", 10, "WITHPAYLOAD").Err(); err != nil {
				b.Fatal(err)
			}
		}
	})
}
