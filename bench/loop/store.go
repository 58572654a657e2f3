package loop

import (
	"context"

	"github.com/memrl/memrl/client"
)

// Hit is one retrieved memory.
type Hit struct {
	ID      int64
	Sim, Q  float64
	Score   float64
	Payload []byte
}

// Memory is one memory to add.
type Memory struct {
	Vec     []float32
	Q       float64
	Payload []byte
}

// Store is the part of the memrl protocol the loop uses, so that the agent
// reads as the loop it is. ClientStore implements it with the project's Go
// client.
type Store interface {
	// Create runs MEM.CREATE coll DIM dim METRIC COSINE ALPHA alpha QINIT
	// qinit [INDEX index] ("" is the server's default, IVFPQ).
	Create(ctx context.Context, coll string, dim int, alpha, qinit float64, index string) error
	Drop(ctx context.Context, coll string) error
	MAdd(ctx context.Context, coll string, ms []Memory) error
	Add(ctx context.Context, coll string, m Memory) (int64, error)
	// Retrieve runs MEM.RETRIEVE … K1 k1 K2 k2 LAMBDA lambda [RAWQ] WITHPAYLOAD.
	Retrieve(ctx context.Context, coll string, q []float32, k1, k2 int, lambda float64, rawQ bool) ([]Hit, error)
	// Reward runs MEM.REWARD coll r id…, returning the new Q values.
	Reward(ctx context.Context, coll string, r float64, ids []int64) ([]float64, error)
}

// ClientStore is a Store over client.Client (client/).
type ClientStore struct{ C *client.Client }

func (s ClientStore) Create(ctx context.Context, coll string, dim int, alpha, qinit float64, index string) error {
	return s.C.Create(ctx, coll, dim, &client.CreateOptions{Metric: client.Cosine, Alpha: &alpha, QInit: qinit, Index: client.IndexKind(index)})
}

func (s ClientStore) Drop(ctx context.Context, coll string) error { return s.C.Drop(ctx, coll) }

func (s ClientStore) MAdd(ctx context.Context, coll string, ms []Memory) error {
	items := make([]client.AddItem, len(ms))
	for i, m := range ms {
		items[i] = client.AddItem{Vector: m.Vec, AddOptions: client.AddOptions{Q: &m.Q, Payload: m.Payload}}
	}
	_, err := s.C.MAdd(ctx, coll, items)
	return err
}

func (s ClientStore) Add(ctx context.Context, coll string, m Memory) (int64, error) {
	return s.C.Add(ctx, coll, m.Vec, &client.AddOptions{Q: &m.Q, Payload: m.Payload})
}

func (s ClientStore) Retrieve(ctx context.Context, coll string, q []float32, k1, k2 int, lambda float64, rawQ bool) ([]Hit, error) {
	rs, err := s.C.Retrieve(ctx, coll, q, &client.RetrieveOptions{K1: k1, K2: k2, Lambda: &lambda, RawQ: rawQ, WithPayload: true})
	if err != nil {
		return nil, err
	}
	hits := make([]Hit, len(rs))
	for i, r := range rs {
		hits[i] = Hit{ID: r.ID, Sim: r.Sim, Q: r.Q, Score: r.Score, Payload: r.Payload}
	}
	return hits, nil
}

func (s ClientStore) Reward(ctx context.Context, coll string, r float64, ids []int64) ([]float64, error) {
	return s.C.Reward(ctx, coll, r, client.IDs(ids...)...)
}
