package client

import (
	"context"
	"fmt"
)

// MaxRetrieveMany is the most queries one MEM.MRETRIEVE takes (the
// server's MaxMRetrieveQueries); RetrieveMany refuses more before sending
// anything.
const MaxRetrieveMany = 1024

func retrieveManySpec(coll string, queries [][]float32, o *RetrieveOptions) spec[[][]Result] {
	if len(queries) == 0 || len(queries) > MaxRetrieveMany {
		err := fmt.Errorf("memrl client: RetrieveMany takes 1 to %d queries, got %d", MaxRetrieveMany, len(queries))
		return spec[[][]Result]{err: err}
	}
	args := appendRetrieveOptions(make([]any, 0, 2+2*len(queries)+16), o)
	args = append([]any{"MEM.MRETRIEVE", coll}, args...)
	args = append(args, "QUERIES", len(queries))
	for _, q := range queries {
		args = append(args, "FP32", EncodeFP32(q))
	}
	var with RetrieveOptions
	if o != nil {
		with = *o
	}
	n := len(queries)
	return spec[[][]Result]{args: args, parse: func(v any) ([][]Result, error) {
		a, err := parseArray(v)
		if err != nil {
			return nil, err
		}
		if len(a) != n {
			return nil, badReply(fmt.Sprintf("MEM.MRETRIEVE reply of %d arrays", n), len(a))
		}
		out := make([][]Result, n)
		for i, e := range a {
			if out[i], err = parseResults(e, &with); err != nil {
				return nil, err
			}
		}
		return out, nil
	}}
}

// RetrieveMany runs a two-phase retrieval for each of queries in
// collection coll, all with the options opt (MEM.MRETRIEVE), in one round
// trip: out[i] is what Retrieve(ctx, coll, queries[i], opt) returns. It
// takes 1 to MaxRetrieveMany queries. A query the server refuses fails the
// whole call: the *Error's Query is its position, counting from 1. Errors:
// those of Retrieve, and ErrOOM when the reply would take the server's
// client memory past its --maxmemory (ask for fewer queries or without
// payloads).
func (c *Client) RetrieveMany(ctx context.Context, coll string, queries [][]float32, opt *RetrieveOptions) ([][]Result, error) {
	return run(ctx, c.rdb, retrieveManySpec(coll, queries, opt))
}

// RetrieveMany queues Client.RetrieveMany.
func (p *Pipeline) RetrieveMany(ctx context.Context, coll string, queries [][]float32, opt *RetrieveOptions) *Cmd[[][]Result] {
	return queue(ctx, p, retrieveManySpec(coll, queries, opt))
}
