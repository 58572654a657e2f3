package client

import (
	"context"
	"time"
)

// HistoryEntry is one update of a memory's utility (MEM.HISTORY).
type HistoryEntry struct {
	Time   time.Time // when it was applied (millisecond precision)
	Reward float64   // the reward; a DEDUP merge repeats the last one
	Q      float64   // Q after the update
	Visits int64     // visits after the update (a DEDUP merge leaves it unchanged)
}

func historySpec(coll string, ref Ref, count int) spec[[]HistoryEntry] {
	args := ref.appendArgs([]any{"MEM.HISTORY", coll})
	if count > 0 {
		args = append(args, "COUNT", count)
	}
	return spec[[]HistoryEntry]{args: args, parse: parseHistory}
}

func parseHistory(v any) ([]HistoryEntry, error) {
	rows, err := parseArray(v)
	if err != nil {
		return nil, err
	}
	out := make([]HistoryEntry, len(rows))
	for i, r := range rows {
		f, err := parseArray(r)
		if err != nil {
			return nil, err
		}
		if len(f) != 4 {
			return nil, badReply("a history entry of 4 fields expected", r)
		}
		e := &out[i]
		if e.Time, err = parseMillis(f[0]); err != nil {
			return nil, err
		}
		if e.Reward, err = parseFloat(f[1]); err != nil {
			return nil, err
		}
		if e.Q, err = parseFloat(f[2]); err != nil {
			return nil, err
		}
		if e.Visits, err = parseInt(f[3]); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// History returns the recent updates of the memory ref names (MEM.HISTORY),
// newest first: the latest count when count > 0, else all the server keeps
// (32 by default). Empty for a memory never rewarded.
// Errors: ErrNoMemory, ErrNoCollection, ErrBadParam (count).
func (c *Client) History(ctx context.Context, coll string, ref Ref, count int) ([]HistoryEntry, error) {
	return run(ctx, c.rdb, historySpec(coll, ref, count))
}

// History queues Client.History.
func (p *Pipeline) History(ctx context.Context, coll string, ref Ref, count int) *Cmd[[]HistoryEntry] {
	return queue(ctx, p, historySpec(coll, ref, count))
}
