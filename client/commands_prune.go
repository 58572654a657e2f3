package client

import (
	"context"
	"math"
	"strconv"
	"time"
)

// PruneOptions are MEM.PRUNE's criteria (docs/PROTOCOL.md "Maintenance").
// A memory is pruned when it meets every criterion set among QBelow (with
// MinVisits), Older and Idle; MaxCount then keeps the n highest-Q memories
// of those left. At least one of QBelow, Older, Idle and MaxCount must be
// set: the server refuses a prune without one (never "delete everything").
type PruneOptions struct {
	QBelow    *float64      // Q strictly below this
	MinVisits int64         // with QBelow: only memories with at least this many visits; 0: any
	Older     time.Duration // created more than this long ago (whole seconds); 0: not a criterion
	Idle      time.Duration // not added or rewarded for more than this long (whole seconds); 0: not a criterion
	MaxCount  *int64        // keep at most this many (the highest Q), prune the rest
	Filter    string        // only memories whose attributes match; "" for all
	DryRun    bool          // count, change nothing
}

func pruneSpec(coll string, o PruneOptions) spec[int64] {
	args := appendPruneArgs([]any{"MEM.PRUNE", coll}, o)
	if o.DryRun {
		args = append(args, "DRYRUN")
	}
	return spec[int64]{args: args, parse: parseInt}
}

// appendPruneArgs appends o's criteria (DryRun aside) to args; MEM.CONFIG
// … SET PRUNE takes the same (commands_config.go).
func appendPruneArgs(args []any, o PruneOptions) []any {
	if o.QBelow != nil {
		args = append(args, "QBELOW", strconv.FormatFloat(*o.QBelow, 'g', -1, 64))
		if o.MinVisits != 0 {
			args = append(args, "MINVISITS", o.MinVisits)
		}
	}
	if o.Older != 0 {
		args = append(args, "OLDER", int64(math.Ceil(o.Older.Seconds())))
	}
	if o.Idle != 0 {
		args = append(args, "IDLE", int64(math.Ceil(o.Idle.Seconds())))
	}
	if o.MaxCount != nil {
		args = append(args, "MAXCOUNT", *o.MaxCount)
	}
	if o.Filter != "" {
		args = append(args, "FILTER", o.Filter)
	}
	return args
}

// Prune deletes (with DryRun, counts) the memories of collection coll that
// the criteria select (MEM.PRUNE) and returns how many; the deletes are
// durable when it returns. Errors: ErrBadParam (no criterion, a bad value),
// ErrFilter, ErrNoCollection.
func (c *Client) Prune(ctx context.Context, coll string, opt PruneOptions) (int64, error) {
	return run(ctx, c.rdb, pruneSpec(coll, opt))
}

// Prune queues Client.Prune.
func (p *Pipeline) Prune(ctx context.Context, coll string, opt PruneOptions) *Cmd[int64] {
	return queue(ctx, p, pruneSpec(coll, opt))
}
