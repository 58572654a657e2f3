package hostile

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/memrl/memrl/client"
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
	rdb   *redis.Client  // for CONFIG GET
	c     *client.Client // the MEM.* commands, on rdb
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
	c, _ := client.New(client.Options{Redis: rdb}) // cannot fail with Redis set
	return &honest{rdb: rdb, c: c, rng: rand.New(rand.NewSource(seed)), alpha: alpha, cap: cap}
}

func (h *honest) close() { h.rdb.Close() }

// create (re)creates the collection and empties the model.
func (h *honest) create(ctx context.Context) error {
	h.c.Drop(ctx, honestColl) // it may not exist
	alpha := h.alpha
	err := h.c.Create(ctx, honestColl, honestDim, &client.CreateOptions{Metric: client.L2, Index: client.Flat, Alpha: &alpha})
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

// isReply reports whether err is an error reply from the server, or a
// reply of the wrong shape (as opposed to a network failure).
func isReply(err error) bool {
	var re *client.Error
	return errors.As(err, &re) || errors.Is(err, client.ErrBadReply)
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
	if errors.Is(err, client.ErrNoCollection) {
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

func (h *honest) add(ctx context.Context) {
	m := &memory{vec: make([]float32, honestDim), payload: make([]byte, 1+h.rng.Intn(200))}
	for i := range m.vec {
		m.vec[i] = h.rng.Float32()
	}
	h.rng.Read(m.payload) // binary, with CR, LF and NUL bytes
	want := h.next
	got, err := h.c.Add(ctx, honestColl, m.vec, &client.AddOptions{Payload: m.payload})
	if err != nil {
		h.failed(ctx, "MEM.ADD", err, func(ctx context.Context) error {
			// Did the add happen? Then it has the id we expected.
			info, err := h.getInfo(ctx, want)
			if err != nil {
				if errors.Is(err, client.ErrNoMemory) {
					return nil
				}
				return err
			}
			if !bytes.Equal(info.Payload, m.payload) {
				h.noteWrong("MEM.ADD resync: memory %d has another payload", want)
			}
			m.q, m.visits = info.Q, info.Visits
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
	res, err := h.c.Reward(ctx, honestColl, r, client.ID(int64(id)))
	if err != nil {
		h.failed(ctx, "MEM.REWARD", err, func(ctx context.Context) error {
			// Did the reward apply? Adopt whatever the server has.
			info, err := h.getInfo(ctx, id)
			if err != nil {
				return err
			}
			m.q, m.visits = info.Q, info.Visits
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
	if q := res[0]; !closeTo(q, want) {
		h.noteWrong("MEM.REWARD %d (Q %v, r %v): Q %v, want %v", id, m.q, r, res[0], want)
	}
	m.q = want
}

// getInfo reads memory id. A reply without MEM.GET's documented fields is
// client.ErrBadReply, a wrong answer (isReply), not a network error.
func (h *honest) getInfo(ctx context.Context, id uint64) (*client.Memory, error) {
	return h.c.Get(ctx, honestColl, client.ID(int64(id)), nil)
}

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
	if uint64(in.ID) != id || !closeTo(in.Q, m.q) || in.Visits != m.visits || !bytes.Equal(in.Payload, m.payload) {
		h.noteWrong("MEM.GET %d: id %d q %v visits %d payload %d bytes; want q %v visits %d payload %d bytes (equal: %v)",
			id, in.ID, in.Q, in.Visits, len(in.Payload), m.q, m.visits, len(m.payload), bytes.Equal(in.Payload, m.payload))
	}
}

func (h *honest) retrieve(ctx context.Context) {
	id := h.pick()
	m := h.mems[id]
	lambda := 0.0
	res, err := h.c.Retrieve(ctx, honestColl, m.vec, &client.RetrieveOptions{K1: 1, K2: 1, Lambda: &lambda, WithPayload: true})
	if err != nil {
		h.failed(ctx, "MEM.RETRIEVE", err, nil)
		return
	}
	if len(res) != 1 {
		h.noteWrong("MEM.RETRIEVE of memory %d's vector: %d results, want 1", id, len(res))
		return
	}
	// The client checks the row's shape (ErrBadReply, a wrong answer).
	row := res[0]
	if uint64(row.ID) != id || row.Sim != 0 || !closeTo(row.Q, m.q) || !bytes.Equal(row.Payload, m.payload) {
		h.noteWrong("MEM.RETRIEVE of memory %d's vector: id %d sim %v q %v; want sim 0 q %v and its payload", id, row.ID, row.Sim, row.Q, m.q)
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
	in, err := h.c.Info(ctx, honestColl)
	if err != nil {
		h.failed(ctx, "MEM.INFO", err, nil)
		return
	}
	if in.Count != int64(len(h.ids)) {
		h.noteWrong("MEM.INFO: count %d, want %d", in.Count, len(h.ids))
	}
}

// closeTo allows for a different rounding of the same update (a fused
// multiply-add, say), nothing more.
func closeTo(got, want float64) bool {
	return math.Abs(got-want) <= 1e-12*math.Max(1, math.Abs(want))
}
