package client

import (
	"context"
	"fmt"
	"time"
)

// AddOptions are MEM.ADD's options; the zero value adds a memory with the
// collection's QINIT, no payload, no attributes, no key and no expiry.
type AddOptions struct {
	// ID is the memory's id (0 to 2^63-1); nil lets the collection pick
	// one above every id it has used.
	ID *int64
	// Q is the initial Q; nil is the collection's QINIT.
	Q *float64
	// Payload is opaque bytes, at most 16 MiB; nil sends none.
	Payload []byte
	// Attrs are sent as a JSON object (ATTRS); nil sends none.
	Attrs map[string]any
	// Key is an external name, unique in the collection (1 to 512 bytes);
	// "" sends none. An add with a key in use fails with ErrKeyExists and
	// changes nothing, which makes a retried add safe.
	Key string
	// TTL is the time to live in whole seconds; 0 is no expiry.
	TTL time.Duration
	// Dedup, when set, makes the add return the id of a live memory at
	// least this similar (the similarity of DELTA) instead of adding a
	// near-copy (DEDUP); single adds only, not MAdd.
	Dedup *float64
	// Merge says what a deduplicated add does to the existing memory's
	// Q: "KEEP" (or "", the default), "MAX" or "AVG" (MERGE).
	Merge string
	// Replace makes the add an upsert by Key (REPLACE): the memory holding
	// Key gets this vector, attributes and payload in place, keeping its
	// id, Q, visits and history (and the reply is its id); without one the
	// memory is added. Needs Key, and no ID, TTL or Dedup; single adds only.
	Replace bool
}

// appendAddArgs appends a memory as MEM.ADD takes it after the collection
// name (and as each memory of MEM.MADD is given).
func appendAddArgs(args []any, vec []float32, o *AddOptions) ([]any, error) {
	args = append(args, "FP32", EncodeFP32(vec))
	if o == nil {
		return args, nil
	}
	if o.ID != nil {
		args = append(args, "ID", *o.ID)
	}
	if o.Q != nil {
		args = append(args, "Q", *o.Q)
	}
	if o.Payload != nil {
		args = append(args, "PAYLOAD", o.Payload)
	}
	if o.Attrs != nil {
		b, err := encodeAttrs(o.Attrs)
		if err != nil {
			return nil, err
		}
		args = append(args, "ATTRS", b)
	}
	if o.Key != "" {
		args = append(args, "KEY", o.Key)
	}
	if o.TTL != 0 {
		s, err := seconds(o.TTL)
		if err != nil {
			return nil, err
		}
		args = append(args, "TTL", s)
	}
	if o.Dedup != nil {
		args = append(args, "DEDUP", *o.Dedup)
		if o.Merge != "" {
			args = append(args, "MERGE", o.Merge)
		}
	}
	if o.Replace {
		args = append(args, "REPLACE")
	}
	return args, nil
}

// seconds returns d in whole seconds, the protocol's unit for TTLs.
// A TTL that is not whole seconds is refused rather than rounded: the
// memory would otherwise live longer or shorter than asked.
func seconds(d time.Duration) (int64, error) {
	if d%time.Second != 0 {
		return 0, fmt.Errorf("memrl client: %w whole seconds, got %v", ErrBadTTL, d)
	}
	return int64(d / time.Second), nil
}

func addSpec(coll string, vec []float32, o *AddOptions) spec[int64] {
	args, err := appendAddArgs([]any{"MEM.ADD", coll}, vec, o)
	return spec[int64]{args: args, parse: parseInt, err: err}
}

// Add stores a memory with vector vec in collection coll (MEM.ADD) and
// returns its id. opt may be nil. The reply means the memory is durable
// per the server's --sync policy. Errors: ErrNoCollection, ErrDimension,
// ErrBadVector, ErrIDExists, ErrKeyExists, ErrBadKey, ErrBadAttrs,
// ErrBadTTL, ErrPayloadTooLarge, ErrBadNumber.
func (c *Client) Add(ctx context.Context, coll string, vec []float32, opt *AddOptions) (int64, error) {
	return run(ctx, c.rdb, addSpec(coll, vec, opt))
}

// RetrieveOptions are MEM.RETRIEVE's options; zero values are the server's
// defaults (K1 10, K2 5, LAMBDA 0.5, no DELTA, no FILTER).
type RetrieveOptions struct {
	K1, K2 int      // phase-1 candidates and results, 1..10000
	Lambda *float64 // weight of Q against similarity in [0, 1]; 0 is plain similarity search
	Delta  *float64 // phase 1 keeps only similarities ≥ Delta
	NProbe int      // IVF-PQ lists probed first
	Refine int      // IVF-PQ re-rank factor, at most 256
	// Stop is the IVF-PQ early-stop factor in (0, 1] (STOP): 1 skips only
	// lists that provably cannot help, smaller values stop earlier; 0
	// leaves the server's default.
	Stop float64
	// Filter keeps only memories whose attributes match the expression
	// (docs/PROTOCOL.md "Filters"); "" is no filter.
	Filter      string
	WithPayload bool // fill Result.Payload
	WithAttrs   bool // fill Result.Attrs
	WithKeys    bool // fill Result.Key
	RawQ        bool // RAWQ: rank by (1-λ)·z(sim) + λ·clip(Q, ±3), Q not z-scored (the ablation memrl bench loop runs)
}

// Result is one memory MEM.RETRIEVE returns.
type Result struct {
	ID    int64
	Sim   float64 // similarity to the query (a float32 on the server, exact here)
	Q     float64
	Score float64 // the phase-2 score results are ranked by
	// Payload (WithPayload): nil if the memory has none, or was deleted
	// while the reply was being sent.
	Payload []byte
	Attrs   map[string]any // WithAttrs: nil if the memory has none
	Key     string         // WithKeys: "" if the memory has none
}

func retrieveSpec(coll string, q []float32, o *RetrieveOptions) spec[[]Result] {
	args := appendRetrieveOptions([]any{"MEM.RETRIEVE", coll, "FP32", EncodeFP32(q)}, o)
	var with RetrieveOptions
	if o != nil {
		with = *o
	}
	return spec[[]Result]{args: args, parse: func(v any) ([]Result, error) { return parseResults(v, &with) }}
}

// appendRetrieveOptions appends o's options (MEM.RETRIEVE's, also
// MEM.MRETRIEVE's) to args.
func appendRetrieveOptions(args []any, o *RetrieveOptions) []any {
	if o == nil {
		return args
	}
	if o.K1 != 0 {
		args = append(args, "K1", o.K1)
	}
	if o.K2 != 0 {
		args = append(args, "K2", o.K2)
	}
	if o.Lambda != nil {
		args = append(args, "LAMBDA", *o.Lambda)
	}
	if o.Delta != nil {
		args = append(args, "DELTA", *o.Delta)
	}
	if o.NProbe != 0 {
		args = append(args, "NPROBE", o.NProbe)
	}
	if o.Refine != 0 {
		args = append(args, "REFINE", o.Refine)
	}
	if o.Stop != 0 {
		args = append(args, "STOP", o.Stop)
	}
	if o.Filter != "" {
		args = append(args, "FILTER", o.Filter)
	}
	if o.RawQ {
		args = append(args, "RAWQ")
	}
	if o.WithPayload {
		args = append(args, "WITHPAYLOAD")
	}
	if o.WithAttrs {
		args = append(args, "WITHATTRS")
	}
	if o.WithKeys {
		args = append(args, "WITHKEYS")
	}
	return args
}

// parseResults reads MEM.RETRIEVE's rows: [id, sim, q, score] and then, in
// this order, the payload, attributes and key asked for.
func parseResults(v any, o *RetrieveOptions) ([]Result, error) {
	rows, err := parseArray(v)
	if err != nil {
		return nil, err
	}
	want := 4
	for _, b := range []bool{o.WithPayload, o.WithAttrs, o.WithKeys} {
		if b {
			want++
		}
	}
	out := make([]Result, len(rows))
	for i, rv := range rows {
		row, err := parseArray(rv)
		if err != nil {
			return nil, err
		}
		if len(row) != want {
			return nil, badReply(fmt.Sprintf("MEM.RETRIEVE rows of %d elements", want), len(row))
		}
		r := &out[i]
		if err := firstErr(
			into(&r.ID, row[0], parseInt),
			into(&r.Sim, row[1], parseFloat),
			into(&r.Q, row[2], parseFloat),
			into(&r.Score, row[3], parseFloat),
		); err != nil {
			return nil, err
		}
		j := 4
		if o.WithPayload {
			if r.Payload, err = parsePayload(row[j]); err != nil {
				return nil, err
			}
			j++
		}
		if o.WithAttrs {
			if r.Attrs, err = parseAttrs(row[j]); err != nil {
				return nil, err
			}
			j++
		}
		if o.WithKeys {
			if err := into(&r.Key, row[j], parseOptString); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// Retrieve runs two-phase retrieval for query in collection coll
// (MEM.RETRIEVE) and returns the results best first. opt may be nil.
// Errors: ErrNoCollection, ErrDimension, ErrBadVector, ErrBadParam,
// ErrFilter, ErrReplyTooLarge.
func (c *Client) Retrieve(ctx context.Context, coll string, query []float32, opt *RetrieveOptions) ([]Result, error) {
	return run(ctx, c.rdb, retrieveSpec(coll, query, opt))
}

func rewardSpec(coll string, r float64, nextQ *float64, refs []Ref) spec[[]float64] {
	args := []any{"MEM.REWARD", coll, r}
	for _, ref := range refs {
		args = ref.appendArgs(args)
	}
	if nextQ != nil {
		args = append(args, "NEXTQ", *nextQ)
	}
	return spec[[]float64]{args: args, parse: parseFloats}
}

// Reward gives reward r to each memory named (MEM.REWARD): Q ← Q + α(r −
// Q), visits+1, last_reward = r. It returns the new Q values in the order
// of refs. All or nothing: an unknown memory (ErrNoMemory) changes none.
// Errors also: ErrNoCollection, ErrBadNumber, ErrBadParam (|r| > 1e15),
// ErrWrongArity (no refs).
func (c *Client) Reward(ctx context.Context, coll string, r float64, refs ...Ref) ([]float64, error) {
	return run(ctx, c.rdb, rewardSpec(coll, r, nil, refs))
}

// RewardNextQ is Reward with the next state's value: Q ← Q + α(r +
// γ·nextQ − Q) (MEM.REWARD … NEXTQ). nextQ matters only when the
// collection's GAMMA is not 0.
func (c *Client) RewardNextQ(ctx context.Context, coll string, r, nextQ float64, refs ...Ref) ([]float64, error) {
	return run(ctx, c.rdb, rewardSpec(coll, r, &nextQ, refs))
}

// GetOptions are MEM.GET's and MEM.MGET's options.
type GetOptions struct {
	// WithVector fills Memory.Vector: the vector as stored (normalised to
	// length 1 in a COSINE collection).
	WithVector bool
}

// Memory is one memory as MEM.GET, MEM.MGET and MEM.SCAN return it.
type Memory struct {
	ID         int64
	Q          float64
	Visits     int64
	LastReward float64
	Created    time.Time // millisecond precision
	Updated    time.Time // the last change of Q, attributes or payload
	// Payload is nil when the memory has none (or, in MEM.SCAN, when the
	// scan did not ask for payloads).
	Payload []byte
	Attrs   map[string]any // nil when the memory has none
	Key     string         // "" when the memory has none
	Expires time.Time      // zero when the memory never expires
	Vector  []float32      // with WithVector only
}

// parseMemory reads a field/value array; unknown fields are ignored.
func parseMemory(v any) (*Memory, error) {
	m, err := parseFields(v)
	if err != nil {
		return nil, err
	}
	mem := &Memory{}
	for _, f := range []struct {
		name string
		err  error
	}{
		{"id", into(&mem.ID, m["id"], parseInt)},
		{"q", into(&mem.Q, m["q"], parseFloat)},
		{"visits", into(&mem.Visits, m["visits"], parseInt)},
		{"last_reward", into(&mem.LastReward, m["last_reward"], parseFloat)},
		{"created", into(&mem.Created, m["created"], parseMillis)},
		{"updated", into(&mem.Updated, m["updated"], parseMillis)},
		{"payload", into(&mem.Payload, m["payload"], parsePayload)},
		{"attrs", into(&mem.Attrs, m["attrs"], parseAttrs)},
		{"key", into(&mem.Key, m["key"], parseOptString)},
		{"expires", into(&mem.Expires, m["expires"], parseMillis)},
	} {
		if f.err != nil {
			return nil, fieldErr("memory", f.name, f.err)
		}
	}
	if vec, ok := m["vector"]; ok && vec != nil {
		b, err := parseBytes(vec)
		if err == nil {
			mem.Vector, err = DecodeFP32(b)
		}
		if err != nil {
			return nil, fieldErr("memory", "vector", err)
		}
	}
	return mem, nil
}

func getSpec(coll string, ref Ref, o *GetOptions) spec[*Memory] {
	args := ref.appendArgs([]any{"MEM.GET", coll})
	if o != nil && o.WithVector {
		args = append(args, "WITHVECTOR")
	}
	return spec[*Memory]{args: args, parse: parseMemory}
}

// Get returns the memory ref names in collection coll (MEM.GET). opt may
// be nil. Errors: ErrNoMemory, ErrNoCollection, ErrCorrupt.
func (c *Client) Get(ctx context.Context, coll string, ref Ref, opt *GetOptions) (*Memory, error) {
	return run(ctx, c.rdb, getSpec(coll, ref, opt))
}

func delSpec(coll string, refs []Ref) spec[int64] {
	args := []any{"MEM.DEL", coll}
	for _, ref := range refs {
		args = ref.appendArgs(args)
	}
	return spec[int64]{args: args, parse: parseInt}
}

// Del deletes the memories named (MEM.DEL) and returns how many it
// deleted: unknown ids and keys are not counted and are not an error.
// Errors: ErrNoCollection, ErrWrongArity (no refs).
func (c *Client) Del(ctx context.Context, coll string, refs ...Ref) (int64, error) {
	return run(ctx, c.rdb, delSpec(coll, refs))
}

func delFilterSpec(coll, expr string) spec[int64] {
	return spec[int64]{args: []any{"MEM.DEL", coll, "FILTER", expr}, parse: parseInt}
}

// DelFilter deletes every memory of collection coll whose attributes match
// the filter expression (MEM.DEL coll FILTER expr) and returns how many.
// Errors: ErrFilter, ErrNoCollection.
func (c *Client) DelFilter(ctx context.Context, coll, expr string) (int64, error) {
	return run(ctx, c.rdb, delFilterSpec(coll, expr))
}
