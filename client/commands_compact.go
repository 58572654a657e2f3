package client

import (
	"context"
	"time"
)

// CompactStats is the reply of MEM.COMPACT … WAIT (docs/PROTOCOL.md
// "Compaction"): the vector rows and disk bytes of the collection before
// and after, and how long the compaction took.
type CompactStats struct {
	RowsBefore, RowsAfter   int64
	BytesBefore, BytesAfter int64
	Took                    time.Duration
}

func parseCompactStats(v any) (*CompactStats, error) {
	m, err := parseFields(v)
	if err != nil {
		return nil, err
	}
	st := &CompactStats{}
	var secs float64
	for _, f := range []struct {
		name string
		err  error
	}{
		{"rows_before", into(&st.RowsBefore, m["rows_before"], parseInt)},
		{"rows_after", into(&st.RowsAfter, m["rows_after"], parseInt)},
		{"bytes_before", into(&st.BytesBefore, m["bytes_before"], parseInt)},
		{"bytes_after", into(&st.BytesAfter, m["bytes_after"], parseInt)},
		{"seconds", into(&secs, m["seconds"], parseFloat)},
	} {
		if f.err != nil {
			return nil, fieldErr("MEM.COMPACT", f.name, f.err)
		}
	}
	st.Took = time.Duration(secs * float64(time.Second))
	return st, nil
}

func compactSpec(coll string) spec[struct{}] {
	return spec[struct{}]{args: []any{"MEM.COMPACT", coll}, parse: parseOK}
}

func compactWaitSpec(coll string) spec[*CompactStats] {
	return spec[*CompactStats]{args: []any{"MEM.COMPACT", coll, "WAIT"}, parse: parseCompactStats}
}

// Compact starts a background compaction of collection coll (MEM.COMPACT),
// which rewrites its files without deleted memories, and returns once it
// is started; CollectionInfo does not show its end, MEM.INFO's
// "compacting" field does (through Redis()). Errors: ErrNoCollection, and
// a server error when a compaction of coll is already running.
func (c *Client) Compact(ctx context.Context, coll string) error {
	_, err := run(ctx, c.rdb, compactSpec(coll))
	return err
}

// CompactWait is Compact that returns when the compaction is done
// (MEM.COMPACT … WAIT), with its figures. It may take minutes on a large
// collection: give ctx a deadline to match. It cannot run in a
// transaction (the server refuses it at EXEC).
func (c *Client) CompactWait(ctx context.Context, coll string) (*CompactStats, error) {
	return run(ctx, c.rdb, compactWaitSpec(coll))
}

// Compact queues Client.Compact.
func (p *Pipeline) Compact(ctx context.Context, coll string) *Cmd[struct{}] {
	return queue(ctx, p, compactSpec(coll))
}
