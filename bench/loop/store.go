package loop

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"strconv"

	"github.com/redis/go-redis/v9"
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

// Store is the part of the memrl protocol the loop uses. RedisStore
// implements it over go-redis; it is an interface so that the bench can move
// to the project's Go client (client/) without touching the agent.
type Store interface {
	Create(ctx context.Context, coll string, dim int, alpha, qinit float64) error
	Drop(ctx context.Context, coll string) error
	MAdd(ctx context.Context, coll string, ms []Memory) error
	Add(ctx context.Context, coll string, m Memory) (int64, error)
	// Retrieve runs MEM.RETRIEVE … K1 k1 K2 k2 LAMBDA lambda [RAWQ] WITHPAYLOAD.
	Retrieve(ctx context.Context, coll string, q []float32, k1, k2 int, lambda float64, rawQ bool) ([]Hit, error)
	// Reward runs MEM.REWARD coll r id…, returning the new Q values.
	Reward(ctx context.Context, coll string, r float64, ids []int64) ([]float64, error)
}

// RedisStore is a Store over a go-redis client.
type RedisStore struct{ C *redis.Client }

func blob(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, f := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(f))
	}
	return b
}

func (s RedisStore) Create(ctx context.Context, coll string, dim int, alpha, qinit float64) error {
	return s.C.Do(ctx, "MEM.CREATE", coll, "DIM", dim, "METRIC", "COSINE", "ALPHA", alpha, "QINIT", qinit).Err()
}

func (s RedisStore) Drop(ctx context.Context, coll string) error {
	return s.C.Do(ctx, "MEM.DROP", coll).Err()
}

func (s RedisStore) MAdd(ctx context.Context, coll string, ms []Memory) error {
	args := make([]any, 0, 2+6*len(ms))
	args = append(args, "MEM.MADD", coll)
	for _, m := range ms {
		args = append(args, "FP32", blob(m.Vec), "Q", m.Q, "PAYLOAD", m.Payload)
	}
	return s.C.Do(ctx, args...).Err()
}

func (s RedisStore) Add(ctx context.Context, coll string, m Memory) (int64, error) {
	return s.C.Do(ctx, "MEM.ADD", coll, "FP32", blob(m.Vec), "Q", m.Q, "PAYLOAD", m.Payload).Int64()
}

func (s RedisStore) Retrieve(ctx context.Context, coll string, q []float32, k1, k2 int, lambda float64, rawQ bool) ([]Hit, error) {
	args := []any{"MEM.RETRIEVE", coll, "FP32", blob(q), "K1", k1, "K2", k2, "LAMBDA", lambda, "WITHPAYLOAD"}
	if rawQ {
		args = append(args, "RAWQ")
	}
	rows, err := s.C.Do(ctx, args...).Slice()
	if err != nil {
		return nil, err
	}
	hits := make([]Hit, len(rows))
	for i, r := range rows {
		f, ok := r.([]any)
		if !ok || len(f) < 5 {
			return nil, fmt.Errorf("MEM.RETRIEVE row %d: %v", i, r)
		}
		id, ok := f[0].(int64)
		if !ok {
			return nil, fmt.Errorf("MEM.RETRIEVE row %d id: %v", i, f[0])
		}
		h := Hit{ID: id}
		for j, dst := range []*float64{&h.Sim, &h.Q, &h.Score} {
			if *dst, err = num(f[1+j]); err != nil {
				return nil, fmt.Errorf("MEM.RETRIEVE row %d: %w", i, err)
			}
		}
		p, _ := f[4].(string)
		h.Payload = []byte(p)
		hits[i] = h
	}
	return hits, nil
}

func (s RedisStore) Reward(ctx context.Context, coll string, r float64, ids []int64) ([]float64, error) {
	args := make([]any, 0, 3+len(ids))
	args = append(args, "MEM.REWARD", coll, r)
	for _, id := range ids {
		args = append(args, id)
	}
	vals, err := s.C.Do(ctx, args...).Slice()
	if err != nil {
		return nil, err
	}
	out := make([]float64, len(vals))
	for i, v := range vals {
		if out[i], err = num(v); err != nil {
			return nil, fmt.Errorf("MEM.REWARD: %w", err)
		}
	}
	return out, nil
}

// num reads a float reply: a bulk string (RESP2), or a RESP3 double.
func num(v any) (float64, error) {
	switch x := v.(type) {
	case string:
		return strconv.ParseFloat(x, 64)
	case float64:
		return x, nil
	case int64:
		return float64(x), nil
	}
	return 0, fmt.Errorf("not a number: %v", v)
}
