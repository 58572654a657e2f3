package client

import (
	"context"
	"iter"
)

// AddItem is one memory of a MAdd batch.
type AddItem struct {
	Vector []float32
	AddOptions
}

func maddSpec(coll string, items []AddItem) spec[[]int64] {
	args := []any{"MEM.MADD", coll}
	for i := range items {
		var err error
		if args, err = appendAddArgs(args, items[i].Vector, &items[i].AddOptions); err != nil {
			return spec[[]int64]{err: err}
		}
	}
	return spec[[]int64]{args: args, parse: parseInts}
}

// MAdd stores many memories in one command, one log write and one fsync
// (MEM.MADD), and returns their ids in order. All or nothing: a bad memory
// fails the batch, with an *Error whose Memory field is its position
// (counting from 1), and nothing is added. Keep a batch under a fifth of
// the server's --maxmemory (ErrOOM otherwise).
func (c *Client) MAdd(ctx context.Context, coll string, items []AddItem) ([]int64, error) {
	return run(ctx, c.rdb, maddSpec(coll, items))
}

func appendGetOpts(args []any, o *GetOptions) []any {
	if o != nil && o.WithVector {
		args = append(args, "WITHVECTOR")
	}
	return args
}

func mgetSpec(coll string, refs []Ref, o *GetOptions) spec[[]*Memory] {
	args := []any{"MEM.MGET", coll}
	for _, ref := range refs {
		args = ref.appendArgs(args)
	}
	args = appendGetOpts(args, o)
	return spec[[]*Memory]{args: args, parse: func(v any) ([]*Memory, error) {
		a, err := parseArray(v)
		if err != nil {
			return nil, err
		}
		out := make([]*Memory, len(a))
		for i, x := range a {
			if x == nil {
				continue
			}
			if out[i], err = parseMemory(x); err != nil {
				return nil, err
			}
		}
		return out, nil
	}}
}

// MGet returns the memories named, in order, with nil for one that does
// not exist (MEM.MGET). opt may be nil. Errors: ErrNoCollection,
// ErrReplyTooLarge.
func (c *Client) MGet(ctx context.Context, coll string, refs []Ref, opt *GetOptions) ([]*Memory, error) {
	return run(ctx, c.rdb, mgetSpec(coll, refs, opt))
}

// ScanOptions are MEM.SCAN's options.
type ScanOptions struct {
	Count       int    // at most this many memories a page, 1..1000; 0 is 10
	WithPayload bool   // fill Memory.Payload
	WithVector  bool   // fill Memory.Vector
	Filter      string // only memories whose attributes match; "" is all
}

// ScanPage is one page of a scan.
type ScanPage struct {
	// Cursor is the cursor for the next page; "0" means the scan is done.
	Cursor   string
	Memories []*Memory
}

func scanSpec(coll, cursor string, o *ScanOptions) spec[ScanPage] {
	args := []any{"MEM.SCAN", coll, cursor}
	if o != nil {
		if o.Count != 0 {
			args = append(args, "COUNT", o.Count)
		}
		if o.WithPayload {
			args = append(args, "WITHPAYLOAD")
		}
		if o.WithVector {
			args = append(args, "WITHVECTOR")
		}
		if o.Filter != "" {
			args = append(args, "FILTER", o.Filter)
		}
	}
	return spec[ScanPage]{args: args, parse: parseScanPage}
}

func parseScanPage(v any) (ScanPage, error) {
	a, err := parseArray(v)
	if err != nil {
		return ScanPage{}, err
	}
	if len(a) != 2 {
		return ScanPage{}, badReply("MEM.SCAN's [cursor, memories]", len(a))
	}
	var p ScanPage
	if p.Cursor, err = parseString(a[0]); err != nil {
		return ScanPage{}, err
	}
	mems, err := parseArray(a[1])
	if err != nil {
		return ScanPage{}, err
	}
	p.Memories = make([]*Memory, len(mems))
	for i, m := range mems {
		if p.Memories[i], err = parseMemory(m); err != nil {
			return ScanPage{}, err
		}
	}
	return p, nil
}

// Scan reads one page of collection coll from cursor ("0" starts) in
// increasing id order (MEM.SCAN). Go on with the page's Cursor until it is
// "0", not until a short page: a page may hold fewer than Count. Every
// memory present for the whole scan is returned exactly once. opt may be
// nil. See ScanAll for a loop.
func (c *Client) Scan(ctx context.Context, coll, cursor string, opt *ScanOptions) (ScanPage, error) {
	return run(ctx, c.rdb, scanSpec(coll, cursor, opt))
}

// ScanAll iterates over every memory of collection coll, page by page
// (Scan from cursor "0" until the cursor is "0" again). An error ends the
// iteration after it is yielded with a nil memory:
//
//	for m, err := range c.ScanAll(ctx, "plans", nil) {
//		if err != nil { return err }
//		...
//	}
func (c *Client) ScanAll(ctx context.Context, coll string, opt *ScanOptions) iter.Seq2[*Memory, error] {
	return func(yield func(*Memory, error) bool) {
		cursor := "0"
		for {
			p, err := c.Scan(ctx, coll, cursor, opt)
			if err != nil {
				yield(nil, err)
				return
			}
			for _, m := range p.Memories {
				if !yield(m, nil) {
					return
				}
			}
			if p.Cursor == "0" {
				return
			}
			cursor = p.Cursor
		}
	}
}

// countSpec is MEM.COUNT, with FILTER expr when filter is set (an empty
// expr is sent, for the server to refuse, rather than counting everything).
func countSpec(coll string, filter bool, expr string) spec[int64] {
	args := []any{"MEM.COUNT", coll}
	if filter {
		args = append(args, "FILTER", expr)
	}
	return spec[int64]{args: args, parse: parseInt}
}

// Count returns the number of memories in collection coll (MEM.COUNT).
// Errors: ErrNoCollection.
func (c *Client) Count(ctx context.Context, coll string) (int64, error) {
	return run(ctx, c.rdb, countSpec(coll, false, ""))
}

// CountFilter returns the number of memories of collection coll whose
// attributes match the filter expression (MEM.COUNT coll FILTER expr).
// Errors: ErrFilter, ErrNoCollection.
func (c *Client) CountFilter(ctx context.Context, coll, expr string) (int64, error) {
	return run(ctx, c.rdb, countSpec(coll, true, expr))
}

func indexSpec(coll, op, field string) spec[struct{}] {
	return spec[struct{}]{args: []any{"MEM.INDEX", coll, op, field}, parse: parseOK}
}

// IndexAdd indexes attribute field of collection coll for filters
// (MEM.INDEX coll ADD field): a filter on it then narrows phase 1 through
// bitmaps instead of checking each candidate's attributes. It builds the
// field's bitmaps from every memory before returning, holding the
// collection's write lock meanwhile (some 0.5 s per million memories).
// Adding a field already indexed changes nothing. Errors: ErrBadParam (a
// name a filter cannot select, or more than 32 fields), ErrNoCollection.
func (c *Client) IndexAdd(ctx context.Context, coll, field string) error {
	_, err := run(ctx, c.rdb, indexSpec(coll, "ADD", field))
	return err
}

// IndexDrop stops indexing attribute field of collection coll (MEM.INDEX
// coll DROP field); filters on it go on working, checked per candidate.
// Dropping a field not indexed changes nothing. Errors: ErrNoCollection.
func (c *Client) IndexDrop(ctx context.Context, coll, field string) error {
	_, err := run(ctx, c.rdb, indexSpec(coll, "DROP", field))
	return err
}

func indexListSpec(coll string) spec[[]string] {
	return spec[[]string]{args: []any{"MEM.INDEX", coll, "LIST"}, parse: parseStrings}
}

// IndexList returns the attribute fields collection coll indexes, sorted
// (MEM.INDEX coll LIST). Errors: ErrNoCollection.
func (c *Client) IndexList(ctx context.Context, coll string) ([]string, error) {
	return run(ctx, c.rdb, indexListSpec(coll))
}
