package client

import (
	"context"
	"strings"
)

// Metric is a collection's similarity: the cosine, the dot product, or
// minus the squared Euclidean distance.
type Metric string

// The metrics of MEM.CREATE … METRIC.
const (
	Cosine Metric = "COSINE"
	L2     Metric = "L2"
	IP     Metric = "IP"
)

// IndexKind is a collection's phase-1 search.
type IndexKind string

// The kinds of MEM.CREATE … INDEX.
const (
	// Flat always searches exactly.
	Flat IndexKind = "FLAT"
	// IVFPQ (the default) searches exactly until the collection holds
	// CreateOptions.Train memories, then through an IVF-PQ index.
	IVFPQ IndexKind = "IVFPQ"
)

// CreateOptions are MEM.CREATE's options. The zero value of a field means
// the server's default (docs/PROTOCOL.md): a pointer field is sent only
// when set, because zero is a value one may want there.
type CreateOptions struct {
	Metric Metric   // "" is COSINE
	Alpha  *float64 // learning rate in [0, 1]; nil is 0.3
	Gamma  float64  // discount in [0, 1]; default 0
	QInit  float64  // Q of memories added without one; default 0
	Index  IndexKind
	NList  int    // IVF-PQ coarse lists; 0 is chosen at training
	PQM    int    // PQ sub-spaces (at most the dimension; need not divide it); 0 is chosen
	PQBits int    // 8 or 4; 0 is 8
	Train  *int64 // memories before the index trains; nil is 10,000
	// Indexed names attribute fields to index for filters
	// (MEM.CREATE … INDEXED f1,f2).
	Indexed []string
}

func createSpec(coll string, dim int, o *CreateOptions) spec[struct{}] {
	args := []any{"MEM.CREATE", coll, "DIM", dim}
	if o != nil {
		if o.Metric != "" {
			args = append(args, "METRIC", string(o.Metric))
		}
		if o.Alpha != nil {
			args = append(args, "ALPHA", *o.Alpha)
		}
		if o.Gamma != 0 {
			args = append(args, "GAMMA", o.Gamma)
		}
		if o.QInit != 0 {
			args = append(args, "QINIT", o.QInit)
		}
		if o.Index != "" {
			args = append(args, "INDEX", string(o.Index))
		}
		if o.NList != 0 {
			args = append(args, "NLIST", o.NList)
		}
		if o.PQM != 0 {
			args = append(args, "PQM", o.PQM)
		}
		if o.PQBits != 0 {
			args = append(args, "PQBITS", o.PQBits)
		}
		if o.Train != nil {
			args = append(args, "TRAIN", *o.Train)
		}
		if len(o.Indexed) > 0 {
			args = append(args, "INDEXED", strings.Join(o.Indexed, ","))
		}
	}
	return spec[struct{}]{args: args, parse: parseOK}
}

// Create makes collection coll of dim-dimensional vectors (MEM.CREATE).
// opt may be nil. Errors: ErrCollectionExists, ErrBadName, ErrBadParam
// (DIM outside 1..65536, ALPHA outside [0, 1], ...), ErrTooManyCollections.
func (c *Client) Create(ctx context.Context, coll string, dim int, opt *CreateOptions) error {
	_, err := run(ctx, c.rdb, createSpec(coll, dim, opt))
	return err
}

func dropSpec(coll string) spec[struct{}] {
	return spec[struct{}]{args: []any{"MEM.DROP", coll}, parse: parseOK}
}

// Drop deletes collection coll and all its memories (MEM.DROP).
// Errors: ErrNoCollection.
func (c *Client) Drop(ctx context.Context, coll string) error {
	_, err := run(ctx, c.rdb, dropSpec(coll))
	return err
}

func listSpec() spec[[]string] {
	return spec[[]string]{args: []any{"MEM.LIST"}, parse: parseStrings}
}

// List returns the collections' names, sorted (MEM.LIST).
func (c *Client) List(ctx context.Context) ([]string, error) {
	return run(ctx, c.rdb, listSpec())
}

// CollectionInfo is MEM.INFO's reply.
type CollectionInfo struct {
	Name   string
	Dim    int
	Metric Metric
	// Count is the number of memories (expired ones count until the
	// sweeper deletes them, within a second).
	Count               int64
	Alpha, Gamma, QInit float64
	Rows                int64  // vector rows, deleted ones included
	NextID              int64  // the id an add without ID gets now; 0 when none is left
	Index               string // "flat", "ivfpq" or "flat+building"…, as the server names it

	// Maintenance (docs/PROTOCOL.md "Maintenance"); zero values from a
	// server that does not report them.
	PrunePolicy string // the background prune policy in SET PRUNE's syntax; "" when none
	Snapshots   int64  // snapshots the collection holds
	Compacting  bool   // a compaction is running
	DeletedRows int64  // vector rows a compaction would free: holding no live memory, not pinned
	PinnedRows  int64  // vector rows holding no live memory that snapshots pin
	DiskBytes   int64  // the collection's files' bytes
}

func parseInfo(v any) (*CollectionInfo, error) {
	m, err := parseFields(v)
	if err != nil {
		return nil, err
	}
	in := &CollectionInfo{}
	var dim int64
	var metric string
	for _, f := range []struct {
		name string
		err  error
	}{
		{"name", into(&in.Name, m["name"], parseString)},
		{"dim", into(&dim, m["dim"], parseInt)},
		{"metric", into(&metric, m["metric"], parseString)},
		{"count", into(&in.Count, m["count"], parseInt)},
		{"alpha", into(&in.Alpha, m["alpha"], parseFloat)},
		{"gamma", into(&in.Gamma, m["gamma"], parseFloat)},
		{"qinit", into(&in.QInit, m["qinit"], parseFloat)},
		{"rows", into(&in.Rows, m["rows"], parseInt)},
		{"next_id", into(&in.NextID, m["next_id"], parseInt)},
		{"index", into(&in.Index, m["index"], parseString)},
	} {
		if f.err != nil {
			return nil, fieldErr("MEM.INFO", f.name, f.err)
		}
	}
	in.Dim, in.Metric = int(dim), Metric(strings.ToUpper(metric))
	var compacting int64
	for _, f := range []struct {
		name string
		into func(v any) error
	}{
		{"prune_policy", func(v any) error { return into(&in.PrunePolicy, v, parseString) }},
		{"snapshots", func(v any) error { return into(&in.Snapshots, v, parseInt) }},
		{"compacting", func(v any) error { return into(&compacting, v, parseInt) }},
		{"deleted_rows", func(v any) error { return into(&in.DeletedRows, v, parseInt) }},
		{"pinned_rows", func(v any) error { return into(&in.PinnedRows, v, parseInt) }},
		{"disk_bytes", func(v any) error { return into(&in.DiskBytes, v, parseInt) }},
	} {
		if v, ok := m[f.name]; ok {
			if err := f.into(v); err != nil {
				return nil, fieldErr("MEM.INFO", f.name, err)
			}
		}
	}
	in.Compacting = compacting != 0
	return in, nil
}

func infoSpec(coll string) spec[*CollectionInfo] {
	return spec[*CollectionInfo]{args: []any{"MEM.INFO", coll}, parse: parseInfo}
}

// Info describes collection coll (MEM.INFO). Errors: ErrNoCollection.
func (c *Client) Info(ctx context.Context, coll string) (*CollectionInfo, error) {
	return run(ctx, c.rdb, infoSpec(coll))
}

func checkpointSpec(full bool) spec[struct{}] {
	args := []any{"MEM.CHECKPOINT"}
	if full {
		args = append(args, "FULL")
	}
	return spec[struct{}]{args: args, parse: parseOK}
}

// Checkpoint writes a checkpoint and returns once it is written
// (MEM.CHECKPOINT): a delta of what changed since the last one, or a full
// one when due or when full is true. Errors: ErrCheckpointsStopped.
func (c *Client) Checkpoint(ctx context.Context, full bool) error {
	_, err := run(ctx, c.rdb, checkpointSpec(full))
	return err
}

// VerifyReport is MEM.VERIFY's reply for an undamaged collection.
type VerifyReport struct {
	Rows           int64  // vector rows checked (live or deleted)
	Payloads       int64  // payloads checked
	LegacyPayloads int64  // payloads from before checksums, not checkable
	ChecksumFile   string // "checked"
	Index          string // "none" or "ok"
	Damaged        int64  // always 0: damage is an ErrCorrupt error
}

func parseVerify(v any) (*VerifyReport, error) {
	m, err := parseFields(v)
	if err != nil {
		return nil, err
	}
	r := &VerifyReport{}
	for _, f := range []struct {
		name string
		err  error
	}{
		{"rows", into(&r.Rows, m["rows"], parseInt)},
		{"payloads", into(&r.Payloads, m["payloads"], parseInt)},
		{"legacy_payloads", into(&r.LegacyPayloads, m["legacy_payloads"], parseInt)},
		{"checksum_file", into(&r.ChecksumFile, m["checksum_file"], parseString)},
		{"index", into(&r.Index, m["index"], parseString)},
		{"damaged", into(&r.Damaged, m["damaged"], parseInt)},
	} {
		if f.err != nil {
			return nil, fieldErr("MEM.VERIFY", f.name, f.err)
		}
	}
	return r, nil
}

func verifySpec(coll string) spec[*VerifyReport] {
	return spec[*VerifyReport]{args: []any{"MEM.VERIFY", coll}, parse: parseVerify}
}

// Verify checks every vector row, payload and index list of collection
// coll against its checksums (MEM.VERIFY). Damage is an error matching
// ErrCorrupt whose message lists the damaged pieces; nothing is repaired.
func (c *Client) Verify(ctx context.Context, coll string) (*VerifyReport, error) {
	return run(ctx, c.rdb, verifySpec(coll))
}
