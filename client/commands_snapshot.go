package client

import (
	"context"
	"time"
)

// Snapshot is one entry of MEM.SNAPSHOTS.
type Snapshot struct {
	Name     string
	Created  time.Time // millisecond precision
	Memories int64     // memories it holds
}

func snapshotSpec(coll, name string) spec[struct{}] {
	return spec[struct{}]{args: []any{"MEM.SNAPSHOT", coll, name}, parse: parseOK}
}

func snapshotsSpec(coll string) spec[[]Snapshot] {
	return spec[[]Snapshot]{args: []any{"MEM.SNAPSHOTS", coll}, parse: parseSnapshots}
}

func rollbackSpec(coll, name string) spec[int64] {
	return spec[int64]{args: []any{"MEM.ROLLBACK", coll, name}, parse: parseInt}
}

func delSnapshotSpec(coll, name string) spec[bool] {
	return spec[bool]{args: []any{"MEM.DELSNAPSHOT", coll, name}, parse: parseBool}
}

func parseSnapshots(v any) ([]Snapshot, error) {
	a, err := parseArray(v)
	if err != nil {
		return nil, err
	}
	out := make([]Snapshot, len(a))
	for i, x := range a {
		e, err := parseArray(x)
		if err != nil || len(e) != 3 {
			return nil, badReply("MEM.SNAPSHOTS entries are [name, created, memories]", x)
		}
		name, err := parseString(e[0])
		if err != nil {
			return nil, err
		}
		ms, err := parseInt(e[1])
		if err != nil {
			return nil, err
		}
		n, err := parseInt(e[2])
		if err != nil {
			return nil, err
		}
		out[i] = Snapshot{Name: name, Created: time.UnixMilli(ms), Memories: n}
	}
	return out, nil
}

// Snapshot records collection coll's present state under name
// (MEM.SNAPSHOT): every memory's Q, visits, reward statistics, attributes,
// key and expiry, and which memories exist (not their vectors). It is
// durable when it returns. Errors: ErrSnapshotExists, ErrBadSnapshotName,
// ErrTooManySnapshots, ErrNoCollection.
func (c *Client) Snapshot(ctx context.Context, coll, name string) error {
	_, err := run(ctx, c.rdb, snapshotSpec(coll, name))
	return err
}

// Snapshots lists collection coll's snapshots, oldest first
// (MEM.SNAPSHOTS). Errors: ErrNoCollection.
func (c *Client) Snapshots(ctx context.Context, coll string) ([]Snapshot, error) {
	return run(ctx, c.rdb, snapshotsSpec(coll))
}

// Rollback restores collection coll to snapshot name (MEM.ROLLBACK):
// memories added since are removed, deleted ones come back, and every
// memory's Q, visits, attributes, key and expiry are as they were. It
// returns how many memories changed, durably and atomically. Errors:
// ErrNoSnapshot, ErrSnapshotDamaged, ErrNoCollection.
func (c *Client) Rollback(ctx context.Context, coll, name string) (int64, error) {
	return run(ctx, c.rdb, rollbackSpec(coll, name))
}

// DelSnapshot frees snapshot name of collection coll (MEM.DELSNAPSHOT)
// and reports whether it existed. Errors: ErrNoCollection.
func (c *Client) DelSnapshot(ctx context.Context, coll, name string) (bool, error) {
	return run(ctx, c.rdb, delSnapshotSpec(coll, name))
}

// Snapshot queues Client.Snapshot.
func (p *Pipeline) Snapshot(ctx context.Context, coll, name string) *Cmd[struct{}] {
	return queue(ctx, p, snapshotSpec(coll, name))
}

// Rollback queues Client.Rollback.
func (p *Pipeline) Rollback(ctx context.Context, coll, name string) *Cmd[int64] {
	return queue(ctx, p, rollbackSpec(coll, name))
}
