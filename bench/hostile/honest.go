package hostile

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// honestColl is the honest client's collection; the http attack's body
// tries to drop it.
const honestColl = "honest"

const honestDim = 8

// memory is the honest client's model of one memory.
type memory struct {
	vec     []float32
	q       float64
	visits  int64
	payload []byte
}

// honest is the one well-behaved client. It is used by one goroutine.
type honest struct {
	rdb   *redis.Client
	rng   *rand.Rand
	alpha float64
	cap   int // most memories kept

	mems map[uint64]*memory
	ids  []uint64 // the keys of mems, for random picks
	next uint64   // the id the collection will assign to the next add

	// resync, when set, must succeed before any other command: it re-reads
	// what a command that failed on the network may or may not have done.
	resync func(ctx context.Context) error

	wrong     int64    // answers that disagree with the model
	wrongLog  []string // the first few wrong answers
	errs      int64    // network errors and timeouts
	errLog    []string // the first few
	vanished  int64    // times the collection was found dropped
	recreated int64
}

func newHonest(addr string, seed int64, alpha float64, cap int) *honest {
	rdb := redis.NewClient(&redis.Options{
		Addr:     addr,
		Protocol: 2,
		PoolSize: 1,
		// No retries: a retried reward would apply twice behind the
		// model's back. The client re-reads instead (resync).
		MaxRetries:   -1,
		DialTimeout:  2 * time.Second,
		ReadTimeout:  5 * time.Second,
		WriteTimeout: 5 * time.Second,
	})
	return &honest{rdb: rdb, rng: rand.New(rand.NewSource(seed)), alpha: alpha, cap: cap}
}

func (h *honest) close() { h.rdb.Close() }

// create (re)creates the collection and empties the model.
func (h *honest) create(ctx context.Context) error {
	h.rdb.Do(ctx, "MEM.DROP", honestColl) // it may not exist
	err := h.rdb.Do(ctx, "MEM.CREATE", honestColl, "DIM", honestDim, "METRIC", "L2",
		"INDEX", "FLAT", "ALPHA", strconv.FormatFloat(h.alpha, 'g', -1, 64)).Err()
	if err != nil {
		return err
	}
	h.mems = make(map[uint64]*memory)
	h.ids = h.ids[:0]
	h.next = 1
	h.resync = nil
	return nil
}

func (h *honest) noteWrong(format string, args ...any) {
	h.wrong++
	if len(h.wrongLog) < 10 {
		h.wrongLog = append(h.wrongLog, fmt.Sprintf(format, args...))
	}
}

func (h *honest) noteErr(op string, err error) {
	h.errs++
	if len(h.errLog) < 10 {
		h.errLog = append(h.errLog, op+": "+err.Error())
	}
	// Back off a little: a dead server refuses connections at once, and
	// the loop must not spin.
	time.Sleep(10 * time.Millisecond)
}

// isReply reports whether err is an error reply from the server (as
// opposed to a network failure).
func isReply(err error) bool {
	var re redis.Error
	return errors.As(err, &re)
}

// failed handles an error of a command the model says must succeed: an
// error reply is a wrong answer (and if the collection is gone, the
// collection is recreated); a network error is an honest error, after
// which resync, if not nil, must run. It returns nothing useful; the
// caller just moves on.
func (h *honest) failed(ctx context.Context, op string, err error, resync func(context.Context) error) {
	if !isReply(err) {
		h.noteErr(op, err)
		h.resync = resync
		return
	}
	h.noteWrong("%s: error reply %q", op, err)
	if strings.Contains(err.Error(), "no such collection") {
		h.vanished++
		if h.create(ctx) == nil {
			h.recreated++
		}
	}
}

// step runs one random operation and checks its answer.
func (h *honest) step(ctx context.Context) {
	if h.resync != nil {
		if err := h.resync(ctx); err != nil {
			if isReply(err) {
				h.failed(ctx, "resync", err, nil)
			} else {
				h.noteErr("resync", err)
			}
			return
		}
		h.resync = nil
		return
	}
	switch r := h.rng.Intn(100); {
	case len(h.ids) < 20 || (r < 20 && len(h.ids) < h.cap):
		h.add(ctx)
	case r < 55:
		h.reward(ctx)
	case r < 80:
		h.get(ctx)
	default:
		h.retrieve(ctx)
	}
}

func (h *honest) pick() uint64 { return h.ids[h.rng.Intn(len(h.ids))] }

func fp32(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, f := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(f))
	}
	return b
}

func (h *honest) add(ctx context.Context) {
	m := &memory{vec: make([]float32, honestDim), payload: make([]byte, 1+h.rng.Intn(200))}
	for i := range m.vec {
		m.vec[i] = h.rng.Float32()
	}
	h.rng.Read(m.payload) // binary, with CR, LF and NUL bytes
	want := h.next
	got, err := h.rdb.Do(ctx, "MEM.ADD", honestColl, "FP32", fp32(m.vec), "PAYLOAD", m.payload).Int64()
	if err != nil {
		h.failed(ctx, "MEM.ADD", err, func(ctx context.Context) error {
			// Did the add happen? Then it has the id we expected.
			info, err := h.getInfo(ctx, want)
			if err != nil {
				if isReply(err) && strings.Contains(err.Error(), "no such memory") {
					return nil
				}
				return err
			}
			if !bytes.Equal(info.payload, m.payload) {
				h.noteWrong("MEM.ADD resync: memory %d has another payload", want)
			}
			m.q, m.visits = info.q, info.visits
			h.insert(want, m)
			return nil
		})
		return
	}
	if uint64(got) != want {
		h.noteWrong("MEM.ADD: id %d, want %d", got, want)
		// Follow the server so that later checks stay meaningful.
		want = uint64(got)
	}
	h.insert(want, m)
}

func (h *honest) insert(id uint64, m *memory) {
	if _, ok := h.mems[id]; !ok {
		h.ids = append(h.ids, id)
	}
	h.mems[id] = m
	h.next = max(h.next, id+1)
}

func (h *honest) reward(ctx context.Context) {
	id := h.pick()
	m := h.mems[id]
	r := math.Round((h.rng.Float64()*2-1)*1000) / 1000
	want := m.q + h.alpha*(r-m.q) // qtable.Update with gamma 0
	res, err := h.rdb.Do(ctx, "MEM.REWARD", honestColl, strconv.FormatFloat(r, 'g', -1, 64), id).Slice()
	if err != nil {
		h.failed(ctx, "MEM.REWARD", err, func(ctx context.Context) error {
			// Did the reward apply? Adopt whatever the server has.
			info, err := h.getInfo(ctx, id)
			if err != nil {
				return err
			}
			m.q, m.visits = info.q, info.visits
			return nil
		})
		return
	}
	m.visits++
	if len(res) != 1 {
		h.noteWrong("MEM.REWARD %d: %d values, want 1", id, len(res))
		m.q = want
		return
	}
	q, err := parseFloat(res[0])
	if err != nil || !closeTo(q, want) {
		h.noteWrong("MEM.REWARD %d (Q %v, r %v): Q %v, want %v", id, m.q, r, res[0], want)
	}
	m.q = want
}

// info is what MEM.GET says of a memory.
type info struct {
	id      int64
	q       float64
	visits  int64
	payload []byte
}

func (h *honest) getInfo(ctx context.Context, id uint64) (info, error) {
	res, err := h.rdb.Do(ctx, "MEM.GET", honestColl, id).Slice()
	if err != nil {
		return info{}, err
	}
	var in info
	// 7 field/value pairs, and since issue 9 attrs, key and expires.
	if len(res) != 20 {
		return in, fmt.Errorf("MEM.GET %d: %d fields, want 20: %w", id, len(res), errMalformed)
	}
	for i := 0; i+1 < len(res); i += 2 {
		key, _ := res[i].(string)
		switch key {
		case "id":
			in.id, _ = res[i+1].(int64)
		case "q":
			in.q, err = parseFloat(res[i+1])
		case "visits":
			in.visits, _ = res[i+1].(int64)
		case "payload":
			s, _ := res[i+1].(string)
			in.payload = []byte(s)
		}
		if err != nil {
			return in, fmt.Errorf("MEM.GET %d: field %s: %w", id, key, errMalformed)
		}
	}
	return in, nil
}

// errMalformed marks a reply of the wrong shape: a wrong answer, not a
// network error.
var errMalformed = redisError("malformed reply")

type redisError string

func (e redisError) Error() string { return string(e) }
func (redisError) RedisError()     {}

func (h *honest) get(ctx context.Context) {
	id := h.pick()
	h.check(ctx, id)
}

// check reads memory id and compares it with the model.
func (h *honest) check(ctx context.Context, id uint64) {
	m := h.mems[id]
	in, err := h.getInfo(ctx, id)
	if err != nil {
		h.failed(ctx, "MEM.GET", err, nil)
		return
	}
	if uint64(in.id) != id || !closeTo(in.q, m.q) || in.visits != m.visits || !bytes.Equal(in.payload, m.payload) {
		h.noteWrong("MEM.GET %d: id %d q %v visits %d payload %d bytes; want q %v visits %d payload %d bytes (equal: %v)",
			id, in.id, in.q, in.visits, len(in.payload), m.q, m.visits, len(m.payload), bytes.Equal(in.payload, m.payload))
	}
}

func (h *honest) retrieve(ctx context.Context) {
	id := h.pick()
	m := h.mems[id]
	res, err := h.rdb.Do(ctx, "MEM.RETRIEVE", honestColl, "FP32", fp32(m.vec),
		"K1", 1, "K2", 1, "LAMBDA", 0, "WITHPAYLOAD").Slice()
	if err != nil {
		h.failed(ctx, "MEM.RETRIEVE", err, nil)
		return
	}
	if len(res) != 1 {
		h.noteWrong("MEM.RETRIEVE of memory %d's vector: %d results, want 1", id, len(res))
		return
	}
	row, _ := res[0].([]any)
	if len(row) != 5 {
		h.noteWrong("MEM.RETRIEVE of memory %d's vector: row of %d, want 5", id, len(row))
		return
	}
	gotID, _ := row[0].(int64)
	sim, errS := parseFloat(row[1])
	q, errQ := parseFloat(row[2])
	payload, _ := row[4].(string)
	if uint64(gotID) != id || errS != nil || sim != 0 || errQ != nil || !closeTo(q, m.q) || payload != string(m.payload) {
		h.noteWrong("MEM.RETRIEVE of memory %d's vector: id %d sim %v q %v; want sim 0 q %v and its payload", id, gotID, row[1], row[2], m.q)
	}
}

// sweep re-reads every memory of the model, then checks that the
// collection holds no more than the model: MEM.INFO's count. The count
// also catches a collection dropped after the last command, when the
// model may be empty.
func (h *honest) sweep(ctx context.Context) {
	for _, id := range h.ids {
		h.check(ctx, id)
	}
	res, err := h.rdb.Do(ctx, "MEM.INFO", honestColl).Slice()
	if err != nil {
		h.failed(ctx, "MEM.INFO", err, nil)
		return
	}
	for i := 0; i+1 < len(res); i += 2 {
		if key, _ := res[i].(string); key == "count" {
			if n, _ := res[i+1].(int64); n != int64(len(h.ids)) {
				h.noteWrong("MEM.INFO: count %d, want %d", n, len(h.ids))
			}
			return
		}
	}
	h.noteWrong("MEM.INFO: no count field in %v", res)
}

func parseFloat(v any) (float64, error) {
	s, ok := v.(string)
	if !ok {
		return 0, fmt.Errorf("not a bulk string: %v", v)
	}
	return strconv.ParseFloat(s, 64)
}

// closeTo allows for a different rounding of the same update (a fused
// multiply-add, say), nothing more.
func closeTo(got, want float64) bool {
	return math.Abs(got-want) <= 1e-12*math.Max(1, math.Abs(want))
}
