package client

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"
)

// Cmd is a command queued in a Pipeline. Its result is there once the
// pipeline's Exec has returned; before that Result reports ErrNotExecuted.
type Cmd[T any] struct {
	cmd   *redis.Cmd // nil if the command was never queued (err is set)
	parse func(any) (T, error)
	err   error // an error found before queuing
	p     *Pipeline
}

// ErrNotExecuted: a queued command's result is read after its pipeline's
// Exec has returned.
var ErrNotExecuted = errors.New("memrl client: the pipeline has not been executed")

// Result returns the command's typed result, or its error: an *Error for
// the server's error reply (in a transaction each command has its own),
// ErrExecAbort for a transaction the server discarded, or the network
// error that ended the pipeline.
func (c *Cmd[T]) Result() (T, error) {
	var zero T
	if c.err != nil {
		return zero, c.err
	}
	if !c.p.executed {
		return zero, ErrNotExecuted
	}
	return result(c.cmd, c.parse)
}

// Val returns the result, or the zero value if the command failed.
func (c *Cmd[T]) Val() T { v, _ := c.Result(); return v }

// Err returns the command's error, or nil.
func (c *Cmd[T]) Err() error { _, err := c.Result(); return err }

// Pipeline queues typed commands and sends them together with Exec: one
// round trip, and the server's writes in it share one fsync. A pipeline
// made by TxPipeline is sent as MULTI … EXEC: no other client's command
// runs between its commands (docs/PROTOCOL.md "Transactions"; there is no
// rollback: a command that fails at EXEC fails alone).
//
// A Pipeline is not safe for concurrent use, and is used once: queue, then
// Exec (or Discard).
type Pipeline struct {
	p        redis.Pipeliner
	err      error // the first command that could not be queued
	executed bool
}

// Pipeline returns an empty pipeline (no transaction).
func (c *Client) Pipeline() *Pipeline { return &Pipeline{p: c.rdb.Pipeline()} }

// TxPipeline returns an empty pipeline run as one MULTI/EXEC transaction.
func (c *Client) TxPipeline() *Pipeline { return &Pipeline{p: c.rdb.TxPipeline()} }

// Pipelined queues the commands fn queues and runs them with Exec.
func (c *Client) Pipelined(ctx context.Context, fn func(*Pipeline) error) error {
	return pipelined(ctx, c.Pipeline(), fn)
}

// TxPipelined queues the commands fn queues and runs them as one
// transaction.
func (c *Client) TxPipelined(ctx context.Context, fn func(*Pipeline) error) error {
	return pipelined(ctx, c.TxPipeline(), fn)
}

func pipelined(ctx context.Context, p *Pipeline, fn func(*Pipeline) error) error {
	if err := fn(p); err != nil {
		p.Discard()
		return err
	}
	return p.Exec(ctx)
}

// Len returns the number of commands queued.
func (p *Pipeline) Len() int { return p.p.Len() }

// Discard drops the queued commands without sending them.
func (p *Pipeline) Discard() { p.p.Discard() }

// Exec sends the queued commands and reads every reply. It returns the
// first command's error if any failed (each Cmd has its own result).
//
// If a command could not be queued (an attribute map that is not JSON, a
// TTL that is not whole seconds), Exec sends nothing, so a transaction
// never runs without one of its commands, and returns that error.
func (p *Pipeline) Exec(ctx context.Context) error {
	if p.err != nil {
		p.p.Discard()
		p.executed = true
		return p.err
	}
	cmds, err := p.p.Exec(ctx)
	p.executed = true
	if errors.Is(err, redis.Nil) {
		// go-redis reports a null reply (GetAttr of a memory without
		// attributes) as an error; here it is a result, so look on for
		// a real error.
		err = nil
		for _, c := range cmds {
			if e := c.Err(); e != nil && !errors.Is(e, redis.Nil) {
				err = e
				break
			}
		}
	}
	return convertErr(err)
}

// queue adds s to p.
func queue[T any](ctx context.Context, p *Pipeline, s spec[T]) *Cmd[T] {
	c := &Cmd[T]{parse: s.parse, err: s.err, p: p}
	if s.err != nil {
		if p.err == nil {
			p.err = s.err
		}
		return c
	}
	c.cmd = p.p.Do(ctx, s.args...)
	return c
}

// The typed commands, queued. Each is the Client method of the same name;
// its result is read from the returned Cmd after Exec.

// Create queues Client.Create.
func (p *Pipeline) Create(ctx context.Context, coll string, dim int, opt *CreateOptions) *Cmd[struct{}] {
	return queue(ctx, p, createSpec(coll, dim, opt))
}

// Drop queues Client.Drop.
func (p *Pipeline) Drop(ctx context.Context, coll string) *Cmd[struct{}] {
	return queue(ctx, p, dropSpec(coll))
}

// List queues Client.List.
func (p *Pipeline) List(ctx context.Context) *Cmd[[]string] { return queue(ctx, p, listSpec()) }

// Info queues Client.Info.
func (p *Pipeline) Info(ctx context.Context, coll string) *Cmd[*CollectionInfo] {
	return queue(ctx, p, infoSpec(coll))
}

// Checkpoint queues Client.Checkpoint.
func (p *Pipeline) Checkpoint(ctx context.Context, full bool) *Cmd[struct{}] {
	return queue(ctx, p, checkpointSpec(full))
}

// Verify queues Client.Verify.
func (p *Pipeline) Verify(ctx context.Context, coll string) *Cmd[*VerifyReport] {
	return queue(ctx, p, verifySpec(coll))
}

// Add queues Client.Add.
func (p *Pipeline) Add(ctx context.Context, coll string, vec []float32, opt *AddOptions) *Cmd[int64] {
	return queue(ctx, p, addSpec(coll, vec, opt))
}

// MAdd queues Client.MAdd.
func (p *Pipeline) MAdd(ctx context.Context, coll string, items []AddItem) *Cmd[[]int64] {
	return queue(ctx, p, maddSpec(coll, items))
}

// Retrieve queues Client.Retrieve.
func (p *Pipeline) Retrieve(ctx context.Context, coll string, query []float32, opt *RetrieveOptions) *Cmd[[]Result] {
	return queue(ctx, p, retrieveSpec(coll, query, opt))
}

// Reward queues Client.Reward.
func (p *Pipeline) Reward(ctx context.Context, coll string, r float64, refs ...Ref) *Cmd[[]float64] {
	return queue(ctx, p, rewardSpec(coll, r, nil, refs))
}

// RewardNextQ queues Client.RewardNextQ.
func (p *Pipeline) RewardNextQ(ctx context.Context, coll string, r, nextQ float64, refs ...Ref) *Cmd[[]float64] {
	return queue(ctx, p, rewardSpec(coll, r, &nextQ, refs))
}

// Get queues Client.Get.
func (p *Pipeline) Get(ctx context.Context, coll string, ref Ref, opt *GetOptions) *Cmd[*Memory] {
	return queue(ctx, p, getSpec(coll, ref, opt))
}

// MGet queues Client.MGet.
func (p *Pipeline) MGet(ctx context.Context, coll string, refs []Ref, opt *GetOptions) *Cmd[[]*Memory] {
	return queue(ctx, p, mgetSpec(coll, refs, opt))
}

// Del queues Client.Del.
func (p *Pipeline) Del(ctx context.Context, coll string, refs ...Ref) *Cmd[int64] {
	return queue(ctx, p, delSpec(coll, refs))
}

// DelFilter queues Client.DelFilter.
func (p *Pipeline) DelFilter(ctx context.Context, coll, expr string) *Cmd[int64] {
	return queue(ctx, p, delFilterSpec(coll, expr))
}

// Scan queues Client.Scan.
func (p *Pipeline) Scan(ctx context.Context, coll, cursor string, opt *ScanOptions) *Cmd[ScanPage] {
	return queue(ctx, p, scanSpec(coll, cursor, opt))
}

// Count queues Client.Count.
func (p *Pipeline) Count(ctx context.Context, coll string) *Cmd[int64] {
	return queue(ctx, p, countSpec(coll, false, ""))
}

// CountFilter queues Client.CountFilter.
func (p *Pipeline) CountFilter(ctx context.Context, coll, expr string) *Cmd[int64] {
	return queue(ctx, p, countSpec(coll, true, expr))
}

// IndexAdd queues Client.IndexAdd.
func (p *Pipeline) IndexAdd(ctx context.Context, coll, field string) *Cmd[struct{}] {
	return queue(ctx, p, indexSpec(coll, "ADD", field))
}

// IndexDrop queues Client.IndexDrop.
func (p *Pipeline) IndexDrop(ctx context.Context, coll, field string) *Cmd[struct{}] {
	return queue(ctx, p, indexSpec(coll, "DROP", field))
}

// IndexList queues Client.IndexList.
func (p *Pipeline) IndexList(ctx context.Context, coll string) *Cmd[[]string] {
	return queue(ctx, p, indexListSpec(coll))
}

// SetAttr queues Client.SetAttr.
func (p *Pipeline) SetAttr(ctx context.Context, coll string, ref Ref, attrs map[string]any) *Cmd[struct{}] {
	return queue(ctx, p, setAttrSpec(coll, ref, attrs))
}

// GetAttr queues Client.GetAttr.
func (p *Pipeline) GetAttr(ctx context.Context, coll string, ref Ref) *Cmd[map[string]any] {
	return queue(ctx, p, getAttrSpec(coll, ref))
}

// SetPayload queues Client.SetPayload.
func (p *Pipeline) SetPayload(ctx context.Context, coll string, ref Ref, payload []byte) *Cmd[struct{}] {
	return queue(ctx, p, setPayloadSpec(coll, ref, payload))
}

// SetVector queues Client.SetVector.
func (p *Pipeline) SetVector(ctx context.Context, coll string, ref Ref, vec []float32) *Cmd[struct{}] {
	return queue(ctx, p, setVectorSpec(coll, ref, vec))
}

// Expire queues Client.Expire.
func (p *Pipeline) Expire(ctx context.Context, coll string, ref Ref, ttl time.Duration) *Cmd[struct{}] {
	return queue(ctx, p, expireSpec(coll, ref, ttl))
}

// Persist queues Client.Persist.
func (p *Pipeline) Persist(ctx context.Context, coll string, ref Ref) *Cmd[bool] {
	return queue(ctx, p, persistSpec(coll, ref))
}

// TTL queues Client.TTL.
func (p *Pipeline) TTL(ctx context.Context, coll string, ref Ref) *Cmd[time.Duration] {
	return queue(ctx, p, ttlSpec(coll, ref))
}
