package server

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/memrl/memrl/engine"
	"github.com/memrl/memrl/engine/filter"
)

// Batches and scans: MEM.MADD, MEM.MGET, MEM.SCAN and MEM.COUNT (see
// docs/PROTOCOL.md, "Batches and scans"). MEM.GET's WITHVECTOR and the
// reply of one memory that GET, MGET and SCAN share are here too.

// scanPageBytes bounds the payloads and vectors one MEM.SCAN page copies
// (engine.ScanOptions.MaxBytes): a page that reaches it ends early, with
// fewer than COUNT memories, and the cursor goes on from there.
const scanPageBytes = 4 << 20

// maddCopies is how many times MEM.MADD holds its arguments' bytes again
// while it runs, at most, beyond the request the reader holds: the parsed
// vectors and payloads, the engine's checked copies of the vectors, the
// encoded log records, and the log's batch buffer they are copied into.
// It is reserved from the client-memory budget for the command's duration.
const maddCopies = 4

func (m memCommands) registerBatch(s *Server) {
	s.Register("MEM.MADD", 3, m.madd)
	s.Register("MEM.MGET", 2, m.mget, ReadOnly)
	s.Register("MEM.SCAN", 2, m.scan, ReadOnly)
	s.Register("MEM.COUNT", 1, m.count, ReadOnly)
}

// parseMemory parses one memory as MEM.ADD takes it, from a's position:
//
//	(FP32 blob | VALUES d v1 … vd) [ID id] [Q q0] [PAYLOAD bytes]
//
// cmd names the command in errors. With batch set (MEM.MADD) it stops at
// the FP32 or VALUES keyword that starts the next memory; otherwise it
// reads every argument left. The payload is copied: args alias the read
// buffer.
func parseMemory(a *argList, cmd string, batch bool) (engine.AddRequest, error) {
	var req engine.AddRequest
	var err error
	if req.Vector, err = a.vector(); err != nil {
		return req, err
	}
	for a.more() && !(batch && a.atVector()) {
		switch k := a.keyword(); k {
		case "ID":
			req.ID, err = a.uint64("ID")
			req.HasID = true
		case "Q":
			req.Q, err = a.float("Q")
			req.HasQ = true
		case "PAYLOAD":
			var p []byte
			p, err = a.next("PAYLOAD")
			req.Payload = bytes.Clone(p)
		case "DEDUP":
			req.Dedup, err = a.float("DEDUP")
			req.HasDedup = true
		case "MERGE":
			var b []byte
			if b, err = a.next("MERGE"); err == nil {
				req.DedupMerge, err = engine.ParseDedupMerge(strings.ToUpper(string(b)))
			}
		default:
			var ok bool
			if ok, err = a.parseAddExt(k, &req); !ok { // ATTRS, KEY, TTL: commands_attrs.go
				err = fmt.Errorf("syntax error: unknown %s option %q", cmd, k)
			}
		}
		if err != nil {
			return req, err
		}
	}
	if req.DedupMerge != engine.DedupKeep && !req.HasDedup {
		return req, fmt.Errorf("syntax error: MERGE needs DEDUP")
	}
	return req, nil
}

// atVector reports whether the next argument is FP32 or VALUES, the
// keyword a memory of MEM.MADD starts with.
func (a *argList) atVector() bool {
	k := a.args[a.i]
	return bytes.EqualFold(k, []byte("FP32")) || bytes.EqualFold(k, []byte("VALUES"))
}

// MEM.MADD coll memory [memory …]
//
// where each memory is what MEM.ADD takes after coll, starting with its
// vector: (FP32 blob | VALUES d v1 … vd) [ID id] [Q q0] [PAYLOAD bytes].
// All or nothing: every memory is parsed and validated before anything is
// logged, and a bad one is an ERR naming it ("memory 3: ..."). The reply,
// the array of ids in the order given, is sent once the whole batch is
// durable (one log append, one fsync).
func (m memCommands) madd(c *Ctx, args [][]byte) error {
	coll, err := m.coll(args[0])
	if err != nil {
		return err
	}
	var size int64
	for _, b := range args[1:] {
		size += int64(len(b))
	}
	release, err := c.ReserveMemory(maddCopies * size)
	if err != nil {
		return err
	}
	defer release()
	a := argList{args: args, i: 1}
	var reqs []engine.AddRequest
	for a.more() {
		req, err := parseMemory(&a, "MEM.MADD", true)
		if err != nil {
			return fmt.Errorf("memory %d: %w", len(reqs)+1, err)
		}
		reqs = append(reqs, req)
	}
	ids, ticket, err := coll.AddBatchDeferred(reqs)
	if err != nil {
		return err
	}
	// One wait for the batch; pipelined commands share it (durable.go).
	if err := c.AfterDurable(m.wait, uint64(ticket)); err != nil {
		return err
	}
	c.WriteArrayHeader(len(ids))
	for _, id := range ids {
		c.WriteInt(int64(id))
	}
	return nil
}

// memoryReplyFixed bounds the bytes of a memory's reply besides its
// payload, attributes, key and vector: the field names, seven numbers and
// the nulls with their framing.
const memoryReplyFixed = 256

// writeMemory writes the field/value array of MEM.GET for mi: id, q,
// visits, last_reward, created and updated (unix milliseconds), then
// payload when withPayload, then vector (the FP32 blob of the vector as
// stored, normalised for COSINE) when withVector.
func writeMemory(c *Ctx, mi engine.MemoryInfo, withPayload, withVector bool) {
	n := 18
	if withPayload {
		n += 2
	}
	if withVector {
		n += 2
	}
	c.WriteArrayHeader(n)
	c.WriteBulkString("id")
	c.WriteInt(int64(mi.ID))
	c.WriteBulkString("q")
	c.WriteFloat64(mi.Q)
	c.WriteBulkString("visits")
	c.WriteInt(int64(mi.Visits))
	c.WriteBulkString("last_reward")
	c.WriteFloat64(mi.LastReward)
	c.WriteBulkString("created")
	c.WriteInt(mi.Created.UnixMilli())
	c.WriteBulkString("updated")
	c.WriteInt(mi.Updated.UnixMilli())
	if withPayload {
		c.WriteBulkString("payload")
		c.WriteBulk(mi.Payload)
	}
	c.WriteBulkString("attrs")
	writeBulkOrNull(c, mi.Attrs)
	c.WriteBulkString("key")
	writeKeyOrNull(c, mi.Key)
	c.WriteBulkString("expires")
	if mi.Expires.IsZero() {
		c.WriteNull()
	} else {
		c.WriteInt(mi.Expires.UnixMilli())
	}
	if withVector {
		c.WriteBulkString("vector")
		c.WriteBulk(fp32Blob(mi.Vector))
	}
}

// fp32Blob encodes v as MEM.ADD's FP32 takes it: little-endian float32s.
func fp32Blob(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

// MEM.MGET coll (id | KEY k) [(id | KEY k) …] [WITHVECTOR]
//
// Replies an array with, for each id in the order given, MEM.GET's reply,
// or a null for an id with no memory. The reply's size is checked against
// MaxReplyBytes before anything is written. The ids are looked up, then
// read, in admitted steps (mgetStepIDs, mgetStepBytes): a step's memories
// are read holding a search slot and reserved from the client-memory
// budget, and written once the slot is given back, so the reply never
// sits in memory whole and a client slow to read holds no slot. A memory
// deleted meanwhile gets a null. A step that waits for its slot past
// busy-timeout (or for a client gone) ends the command: with -TIMEOUT if
// nothing was written yet, by closing the connection if part of the reply
// is out (see HandlerFunc), rather than desynchronise it.
func (m memCommands) mget(c *Ctx, args [][]byte) error {
	coll, err := m.coll(args[0])
	if err != nil {
		return err
	}
	idArgs := args[1:]
	withVector := bytes.EqualFold(idArgs[len(idArgs)-1], []byte("WITHVECTOR"))
	if withVector {
		idArgs = idArgs[:len(idArgs)-1]
	}
	if len(idArgs) == 0 {
		return c.WrongArity()
	}
	refs := make([]engine.Ref, 0, len(idArgs))
	for a := (argList{args: idArgs}); a.more(); {
		r, err := a.ref()
		if err != nil {
			return err
		}
		refs = append(refs, r)
	}
	ids, sizes, err := mgetSizes(c, coll, refs)
	if err != nil {
		return err
	}
	var vecBytes int64
	if withVector {
		vecBytes = 4 * int64(coll.Config().Dim)
	}
	var total int64
	for _, n := range sizes {
		total += memoryReplyFixed + max(n, 0) + vecBytes
	}
	if err := c.CheckReplySize(total); err != nil {
		return err
	}
	for start := 0; start < len(ids); {
		end := mgetStepEnd(sizes, start, vecBytes)
		if err := mgetStep(c, coll, ids[start:end], sizes[start:end], vecBytes, start == 0, len(ids), withVector); err != nil {
			return err
		}
		start = end
	}
	return nil
}

// mgetStepIDs bounds the ids one admitted step of a MEM.MGET looks up or
// reads (admission.go), and mgetStepBytes the payloads, attributes, keys
// and vectors a step reads, at least one memory: an MGET of many ids is
// many short steps, between which the slot goes to other users' waiting
// searches.
const (
	mgetStepIDs   = 256
	mgetStepBytes = 1 << 20
)

// mgetSizes resolves refs (engine.Collection.PayloadSizesRefs) in admitted
// steps of mgetStepIDs.
func mgetSizes(c *Ctx, coll *engine.Collection, refs []engine.Ref) ([]uint64, []int64, error) {
	type idSizes struct {
		ids   []uint64
		sizes []int64
	}
	ids := make([]uint64, 0, len(refs))
	sizes := make([]int64, 0, len(refs))
	for start := 0; start < len(refs); start += mgetStepIDs {
		part := refs[start:min(len(refs), start+mgetStepIDs)]
		r, err := admitted(c, func() (idSizes, error) {
			i, s, err := coll.PayloadSizesRefs(part)
			return idSizes{i, s}, err
		})
		if err != nil {
			return nil, nil, err
		}
		ids = append(ids, r.ids...)
		sizes = append(sizes, r.sizes...)
	}
	return ids, sizes, nil
}

// mgetStepEnd returns the end of the step of reads starting at start:
// at most mgetStepIDs memories, and no more once their sizes reach
// mgetStepBytes, but at least one.
func mgetStepEnd(sizes []int64, start int, vecBytes int64) int {
	end, sum := start, int64(0)
	for end < len(sizes) && end-start < mgetStepIDs && (end == start || sum < mgetStepBytes) {
		sum += max(sizes[end], 0) + vecBytes
		end++
	}
	return end
}

// mgetStep reads the memories ids (sizes their PayloadSizesRefs sizes, -1
// for none) in one admitted step, then writes them, after the reply's
// header of n memories if first.
func mgetStep(c *Ctx, coll *engine.Collection, ids []uint64, sizes []int64, vecBytes int64, first bool, n int, withVector bool) error {
	// What the step holds: its memories, and one vector's blob at a time.
	held := vecBytes
	for _, s := range sizes {
		held += max(s, 0) + vecBytes
	}
	release, err := c.ReserveMemory(held)
	if err != nil {
		return err
	}
	defer func() { release() }()
	type got struct {
		mi engine.MemoryInfo
		ok bool
	}
	mis, err := admitted(c, func() ([]got, error) {
		mis := make([]got, len(ids))
		for i, id := range ids {
			if sizes[i] < 0 {
				continue // no such id or key
			}
			mi, err := coll.Get(id)
			switch {
			case errors.Is(err, engine.ErrNoMemory), errors.Is(err, engine.ErrNoCollection):
				continue
			case err != nil:
				return nil, err
			}
			mis[i] = got{mi, true}
		}
		return mis, nil
	})
	if err != nil {
		return err // part of the reply may be out: the server closes the connection
	}
	var size int64
	for _, g := range mis {
		size += int64(len(g.mi.Payload)+len(g.mi.Attrs)+len(g.mi.Key)) + vecBytes
	}
	if size += vecBytes; size > held {
		// Replaced by larger memories since the sizes were taken.
		more, err := c.ReserveMemory(size - held)
		if err != nil {
			return err
		}
		prev := release
		release = func() { prev(); more() }
	}
	if first {
		c.WriteArrayHeader(n)
	}
	for _, g := range mis {
		if !g.ok {
			c.WriteNull()
			continue
		}
		writeMemory(c, g.mi, true, withVector)
	}
	return nil
}

// MEM.SCAN coll cursor [COUNT n] [WITHPAYLOAD] [WITHVECTOR] [FILTER expr]
//
// Replies [next-cursor, [memory …]]: up to COUNT memories (default 10, at
// most engine.MaxScanCount) with ids at least cursor, in id order, each as
// MEM.GET's field/value array (payload only WITHPAYLOAD, vector only
// WITHVECTOR). The cursor is a bulk string, "0" to start; "0" returned
// means the scan is complete. A page stops early, with fewer than COUNT
// memories, once the payloads and vectors it holds reach scanPageBytes.
// Every memory present for the whole scan is returned exactly once (see
// engine/scan.go).
func (m memCommands) scan(c *Ctx, args [][]byte) error {
	coll, err := m.coll(args[0])
	if err != nil {
		return err
	}
	cursor, err := parseID(args[1], "cursor")
	if err != nil {
		return err
	}
	opt := engine.ScanOptions{Count: 10, MaxBytes: scanPageBytes}
	a := argList{args: args, i: 2}
	for a.more() {
		switch k := a.keyword(); k {
		case "COUNT":
			opt.Count, err = a.int("COUNT")
		case "WITHPAYLOAD":
			opt.WithPayload = true
		case "WITHVECTOR":
			opt.WithVector = true
		case "FILTER":
			opt.Filter, err = a.filterExpr() // commands_filter.go
		default:
			err = fmt.Errorf("syntax error: unknown MEM.SCAN option %q", k)
		}
		if err != nil {
			return err
		}
	}
	page, next, err := scanPage(c, coll, cursor, opt)
	if err != nil {
		return err
	}
	// The page is in memory already (at most scanPageBytes plus one
	// memory); it is accounted for while it is written, as MEM.GET does.
	var held int64
	for _, mi := range page {
		held += int64(len(mi.Payload)) + 8*int64(len(mi.Vector)) // the vector and its blob
	}
	release, err := c.ReserveMemory(held)
	if err != nil {
		return err
	}
	defer release()
	c.WriteArrayHeader(2)
	c.WriteBulkString(strconv.FormatUint(next, 10))
	c.WriteArrayHeader(len(page))
	for _, mi := range page {
		writeMemory(c, mi, opt.WithPayload, opt.WithVector)
	}
	return nil
}

// scanPage reads one page of a MEM.SCAN; with a filter, in one admitted
// step (admission.go): a filtered page may examine every memory of the
// collection to find COUNT that match. An unfiltered page examines the
// memories it returns only, at most scanPageBytes of them.
func scanPage(c *Ctx, coll *engine.Collection, cursor uint64, opt engine.ScanOptions) ([]engine.MemoryInfo, uint64, error) {
	ctx := c.Context()
	if opt.Filter == nil {
		return coll.ScanContext(ctx, cursor, opt)
	}
	var next uint64
	page, err := admitted(c, func() ([]engine.MemoryInfo, error) {
		p, n, err := coll.ScanContext(ctx, cursor, opt)
		next = n
		return p, err
	})
	return page, next, err
}

// MEM.COUNT coll [FILTER expr]
//
// Replies the number of live memories, or with FILTER of those whose
// attributes match expr; a filtered count is one admitted step
// (admission.go): it may evaluate every memory's attributes.
func (m memCommands) count(c *Ctx, args [][]byte) error {
	if len(args) != 1 && len(args) != 3 {
		return c.WrongArity()
	}
	coll, err := m.coll(args[0])
	if err != nil {
		return err
	}
	var n int
	if len(args) == 3 {
		if !bytes.EqualFold(args[1], []byte("FILTER")) {
			return fmt.Errorf("syntax error: unknown MEM.COUNT option %q", args[1])
		}
		e, perr := filter.Parse(string(args[2]))
		if perr != nil {
			return perr
		}
		// Assigned, not declared: a := here would shadow err and drop a
		// stopped read's error (TestBusyTimeoutStopsEngineReads).
		ctx := c.Context()
		n, err = admitted(c, func() (int, error) { return coll.CountFilterContext(ctx, e) })
	} else {
		n, err = coll.Count()
	}
	if err != nil {
		return err
	}
	c.WriteInt(int64(n))
	return nil
}
