package server

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	"github.com/memrl/memrl/engine"
)

// RegisterMem adds the memory commands (MEM.*), served from db. See
// docs/PROTOCOL.md for their grammar and replies.
func (s *Server) RegisterMem(db *engine.DB) {
	s.RegisterMemFunc(func() *engine.DB { return db })
}

// RegisterMemFunc is RegisterMem for a database that may be replaced while
// the server runs (a replica installing a raft snapshot, package
// replica): every command calls cur for the database it uses. A command
// running while the database is replaced may meet the old one closed
// (engine.ErrClosed, an ERR reply).
func (s *Server) RegisterMemFunc(cur func() *engine.DB) {
	m := memCommands{cur: cur}
	m.wait = func(t uint64) error { return m.db().WaitDurable(engine.Ticket(t)) }
	s.atomicTx = txAtomic{cur: cur, wait: m.wait} // tx_atomic.go
	s.Register("MEM.CREATE", 3, m.create)
	s.Register("MEM.DROP", 1, m.drop)
	s.Register("MEM.LIST", 0, m.list, ReadOnly)
	s.Register("MEM.ADD", 3, m.add)
	s.Register("MEM.RETRIEVE", 3, m.retrieve, ReadOnly)
	s.Register("MEM.MRETRIEVE", 5, m.mretrieve, ReadOnly) // commands_mretrieve.go
	s.Register("MEM.REWARD", 3, m.reward)
	s.Register("MEM.GET", 2, m.get, ReadOnly)
	s.Register("MEM.DEL", 2, m.del)
	s.Register("MEM.INFO", 1, m.info, ReadOnly)
	s.Register("MEM.CHECKPOINT", 0, m.checkpoint, Local) // this node's files only
	s.Register("MEM.VERIFY", 1, m.verify, Local)
	s.registerAttrs(m)    // commands_attrs.go
	m.registerBatch(s)    // MEM.MADD, MEM.MGET, MEM.SCAN, MEM.COUNT: commands_batch.go
	m.registerFilter(s)   // MEM.INDEX: commands_filter.go
	m.registerPrune(s)    // MEM.PRUNE: commands_prune.go
	m.registerHistory(s)  // MEM.HISTORY: commands_history.go
	m.registerConfig(s)   // MEM.CONFIG: commands_config.go
	m.registerSnapshot(s) // MEM.SNAPSHOT, MEM.SNAPSHOTS, MEM.ROLLBACK, MEM.DELSNAPSHOT: commands_snapshot.go
	m.registerCompact(s)  // MEM.COMPACT: commands_compact.go
	s.AddInfoSection("memrl", m.infoSection)
	s.registerMemObservability(cur) // info_mem.go
}

type memCommands struct {
	// cur returns the database (RegisterMemFunc).
	cur func() *engine.DB
	// wait is db.WaitDurable for Ctx.AfterDurable, made once so that a
	// reward allocates no closure.
	wait func(uint64) error
}

// db returns the database the command runs on.
func (m memCommands) db() *engine.DB { return m.cur() }

func (m memCommands) coll(name []byte) (*engine.Collection, error) {
	return m.db().Collection(string(name))
}

// MEM.CREATE coll DIM d [METRIC COSINE|L2|IP] [ALPHA a] [GAMMA g] [QINIT q]
// [INDEX FLAT|IVFPQ] [NLIST n] [PQM m] [PQBITS 4|8] [TRAIN n] [INDEXED f1,f2,…]
func (m memCommands) create(c *Ctx, args [][]byte) error {
	a := argList{args: args, i: 1}
	cfg := engine.NewConfig(0)
	hasDim := false
	for a.more() {
		var err error
		switch k := a.keyword(); k {
		case "DIM":
			cfg.Dim, err = a.int("DIM")
			hasDim = true
		case "METRIC":
			var b []byte
			if b, err = a.next("METRIC"); err == nil {
				cfg.Metric, err = engine.ParseMetric(string(b))
			}
		case "ALPHA":
			cfg.Alpha, err = a.float("ALPHA")
		case "GAMMA":
			cfg.Gamma, err = a.float("GAMMA")
		case "QINIT":
			cfg.QInit, err = a.float("QINIT")
		case "INDEX":
			var b []byte
			if b, err = a.next("INDEX"); err == nil {
				cfg.Index.Kind, err = engine.ParseIndexKind(string(b))
			}
		case "NLIST":
			cfg.Index.NList, err = a.int("NLIST")
		case "PQM":
			cfg.Index.PQM, err = a.int("PQM")
		case "PQBITS":
			cfg.Index.PQBits, err = a.int("PQBITS")
		case "TRAIN":
			cfg.Index.TrainThreshold, err = a.int("TRAIN")
		case "INDEXED":
			cfg.Indexed, err = a.indexedFields() // commands_filter.go
		default:
			err = fmt.Errorf("syntax error: unknown MEM.CREATE option %q", k)
		}
		if err != nil {
			return err
		}
	}
	if !hasDim {
		return fmt.Errorf("syntax error: DIM is required")
	}
	if err := m.db().Create(string(args[0]), cfg); err != nil {
		return err
	}
	c.WriteOK()
	return nil
}

// MEM.DROP coll
func (m memCommands) drop(c *Ctx, args [][]byte) error {
	if len(args) != 1 {
		return c.WrongArity()
	}
	if err := m.db().Drop(string(args[0])); err != nil {
		return err
	}
	c.WriteOK()
	return nil
}

// MEM.LIST
func (m memCommands) list(c *Ctx, args [][]byte) error {
	if len(args) == 1 && strings.EqualFold(string(args[0]), "CLUSTER") {
		return listCluster(c, m.db().List) // commands_cluster.go
	}
	if len(args) != 0 {
		return c.WrongArity()
	}
	names := m.db().List()
	c.WriteArrayHeader(len(names))
	for _, n := range names {
		c.WriteBulkString(n)
	}
	return nil
}

// MEM.ADD coll (FP32 blob | VALUES d v1 … vd) [ID id] [Q q0] [PAYLOAD bytes]
// [ATTRS json] [KEY k] [TTL seconds]
func (m memCommands) add(c *Ctx, args [][]byte) error {
	coll, err := m.coll(args[0])
	if err != nil {
		return err
	}
	a := argList{args: args, i: 1}
	req, err := parseMemory(&a, "MEM.ADD", false) // shared with MEM.MADD: commands_batch.go
	if err != nil {
		return err
	}
	id, ticket, err := coll.AddDeferred(req)
	if err != nil {
		return err
	}
	// Replied once durable; pipelined adds share one wait (durable.go).
	if err := c.AfterDurable(m.wait, uint64(ticket)); err != nil {
		return err
	}
	c.WriteInt(int64(id))
	return nil
}

// MEM.RETRIEVE coll (FP32 blob | VALUES d v1 … vd) [K1 n] [K2 n] [LAMBDA l]
// [DELTA x] [NPROBE n] [REFINE n] [STOP f] [RAWQ] [WITHPAYLOAD] [WITHATTRS] [WITHKEYS] [FILTER expr]
func (m memCommands) retrieve(c *Ctx, args [][]byte) error {
	coll, err := m.coll(args[0])
	if err != nil {
		return err
	}
	a := argList{args: args, i: 1}
	q, err := a.vector()
	if err != nil {
		return err
	}
	ra := newRetrieveArgs()
	for a.more() {
		k := a.keyword()
		ok, err := ra.option(&a, k)
		if !ok {
			err = fmt.Errorf("syntax error: unknown MEM.RETRIEVE option %q", k)
		}
		if err != nil {
			return err
		}
	}
	// One search step, admitted fairly between users (admission.go).
	res, err := admitted(c, func() ([]engine.Result, error) {
		return coll.RetrieveContext(c.Context(), q, ra.engineOptions())
	})
	if err != nil {
		return err
	}
	return m.writeRetrieved(c, coll, res, ra)
}

// retrieveArgs are the options MEM.RETRIEVE and MEM.MRETRIEVE share, as
// parsed by option.
type retrieveArgs struct {
	opt      engine.RetrieveOptions
	withKeys bool
}

func newRetrieveArgs() retrieveArgs { return retrieveArgs{opt: engine.NewRetrieveOptions()} }

// option parses the retrieval option k, whose keyword a has just
// consumed, and its value. ok is false, and a is unchanged, if k is not a
// retrieval option.
func (r *retrieveArgs) option(a *argList, k string) (ok bool, err error) {
	opt := &r.opt
	switch k {
	case "K1":
		opt.K1, err = a.int("K1")
	case "K2":
		opt.K2, err = a.int("K2")
	case "LAMBDA":
		opt.Lambda, err = a.float("LAMBDA")
	case "DELTA":
		opt.Delta, err = a.float("DELTA")
		opt.HasDelta = true
	case "NPROBE":
		opt.NProbe, err = a.int("NPROBE")
	case "REFINE":
		opt.Refine, err = a.int("REFINE")
	case "STOP":
		if opt.Stop, err = a.float("STOP"); err == nil && !(opt.Stop > 0) {
			err = fmt.Errorf("%w: STOP must be in (0, 1], got %v", engine.ErrBadParam, opt.Stop)
		}
	case "RAWQ":
		opt.RawQ = true
	case "WITHPAYLOAD":
		opt.WithPayload = true
	case "WITHATTRS":
		opt.WithAttrs = true
	case "WITHKEYS":
		r.withKeys = true
	case "FILTER":
		opt.Filter, err = a.filterExpr() // commands_filter.go
	default:
		return false, nil
	}
	return true, err
}

// engineOptions returns the options to retrieve with: payloads are not
// read by the engine but streamed by writeRetrieved, one at a time.
func (r *retrieveArgs) engineOptions() engine.RetrieveOptions {
	opt := r.opt
	opt.WithPayload = false
	return opt
}

// writeRetrieved writes one retrieval's reply: an array of result rows as
// r asked for them (docs/PROTOCOL.md, MEM.RETRIEVE). res must come from a
// retrieval with r.engineOptions(); with WITHPAYLOAD the payloads are read
// from coll as the rows are written (writeWithPayloads).
func (m memCommands) writeRetrieved(c *Ctx, coll *engine.Collection, res []engine.Result, r retrieveArgs) error {
	tail := resultTail{attrs: r.opt.WithAttrs, keys: r.withKeys}
	if !r.opt.WithPayload {
		if tail.width() > 0 {
			// Attributes (up to 64 KiB each) and keys make rows large.
			var total int64
			for _, r := range res {
				total += int64(len(r.Attrs)+len(r.Key)) + 96
			}
			if err := c.CheckReplySize(total); err != nil {
				return err
			}
		}
		c.WriteArrayHeader(len(res))
		for _, r := range res {
			writeResultRow(c, r, 4+tail.width())
			tail.write(c, r)
		}
		return nil
	}
	return m.writeWithPayloads(c, coll, res, tail)
}

// resultTail is what a result row holds after its payload (if any): the
// attributes with WITHATTRS, then the key with WITHKEYS.
type resultTail struct{ attrs, keys bool }

func (t resultTail) width() int {
	n := 0
	if t.attrs {
		n++
	}
	if t.keys {
		n++
	}
	return n
}

// write writes the row's attributes and key (each a bulk string, or null
// when the memory has none), as asked.
func (t resultTail) write(c *Ctx, r engine.Result) {
	if t.attrs {
		writeBulkOrNull(c, r.Attrs)
	}
	if t.keys {
		writeKeyOrNull(c, r.Key)
	}
}

// writeResultRow writes [id, sim, q, score] and leaves room for width-4
// more elements.
func writeResultRow(c *Ctx, r engine.Result, width int) {
	c.WriteArrayHeader(width)
	c.WriteInt(int64(r.ID))
	c.WriteFloat32(float32(r.Sim))
	c.WriteFloat64(r.Q)
	c.WriteFloat64(r.Score)
}

// writeWithPayloads writes retrieval results with their payloads, reading
// one payload at a time so that a reply of many large payloads never
// sits in memory whole (4 retrievals of 60 × 16 MiB took 3.96 GB before).
// The reply's size is checked against MaxReplyBytes, and the largest
// payload is reserved from the client-memory budget, before anything is
// written. A memory deleted (or its collection dropped) between the
// retrieval and the read of its payload gets a null payload; a payload that
// fails its checksum is never sent: the connection is closed mid-reply.
func (m memCommands) writeWithPayloads(c *Ctx, coll *engine.Collection, res []engine.Result, tail resultTail) error {
	var total, largest int64
	for _, r := range res {
		total += int64(r.PayloadLen) + 96 // the row's other elements and framing
		total += int64(len(r.Attrs) + len(r.Key))
		largest = max(largest, int64(r.PayloadLen))
	}
	if err := c.CheckReplySize(total); err != nil {
		return err
	}
	release, err := c.ReserveMemory(largest)
	if err != nil {
		return err
	}
	defer release()
	c.WriteArrayHeader(len(res))
	for _, r := range res {
		writeResultRow(c, r, 5+tail.width())
		p, err := coll.Payload(r.ID)
		switch {
		case errors.Is(err, engine.ErrNoMemory), errors.Is(err, engine.ErrNoCollection):
			// Deleted, or its collection dropped, since the retrieval.
			c.WriteNull()
		case err != nil:
			// Part of the reply is out: the server closes the
			// connection (see HandlerFunc) rather than desynchronise it.
			return err
		default:
			c.WriteBulk(p)
		}
		tail.write(c, r)
	}
	return nil
}

// MEM.REWARD coll reward (id | KEY k) [(id | KEY k) …] [NEXTQ v]
func (m memCommands) reward(c *Ctx, args [][]byte) error {
	coll, err := m.coll(args[0])
	if err != nil {
		return err
	}
	r, err := parseFloat(args[1], "reward")
	if err != nil {
		return err
	}
	var ids []uint64
	var refs []engine.Ref // set once a KEY is met; then every memory is in it
	var nextQ *float64
	for i := 2; i < len(args); i++ {
		if bytes.EqualFold(args[i], []byte("KEY")) {
			if i+1 == len(args) {
				return fmt.Errorf("syntax error: key after KEY expected")
			}
			r, err := parseKey(args[i+1])
			if err != nil {
				return err
			}
			if refs == nil {
				for _, id := range ids {
					refs = append(refs, engine.ByID(id))
				}
			}
			refs = append(refs, r)
			i++
			continue
		}
		if bytes.EqualFold(args[i], []byte("NEXTQ")) {
			if i+2 != len(args) {
				return fmt.Errorf("syntax error: NEXTQ takes one value and comes last")
			}
			v, err := parseFloat(args[i+1], "NEXTQ")
			if err != nil {
				return err
			}
			nextQ = &v
			break
		}
		id, err := parseID(args[i], "memory id")
		if err != nil {
			return err
		}
		if refs != nil {
			refs = append(refs, engine.ByID(id))
		} else {
			ids = append(ids, id)
		}
	}
	var qs []float64
	var ticket engine.Ticket
	if refs != nil {
		qs, ticket, err = coll.RewardRefsDeferred(r, refs, nextQ)
	} else {
		qs, ticket, err = coll.RewardDeferred(r, ids, nextQ) // ids only: no Ref slice
	}
	if err != nil {
		return err
	}
	// The reply is sent only once the update is durable; a pipeline of
	// rewards on this connection shares one wait (server/durable.go).
	if err := c.AfterDurable(m.wait, uint64(ticket)); err != nil {
		return err
	}
	c.WriteArrayHeader(len(qs))
	for _, q := range qs {
		c.WriteFloat64(q)
	}
	return nil
}

// MEM.GET coll (id | KEY k) [WITHVECTOR]
func (m memCommands) get(c *Ctx, args [][]byte) error {
	coll, err := m.coll(args[0])
	if err != nil {
		return err
	}
	a := argList{args: args, i: 1}
	ref, err := a.ref()
	if err != nil {
		return err
	}
	withVector := false
	switch rest := args[a.i:]; {
	case len(rest) == 1 && bytes.EqualFold(rest[0], []byte("WITHVECTOR")):
		withVector = true
	case len(rest) == 1:
		return fmt.Errorf("syntax error: unknown MEM.GET option %q", rest[0])
	case len(rest) > 1:
		return c.WrongArity()
	}
	mi, err := coll.GetRef(ref)
	if err != nil {
		return err
	}
	release, err := c.ReserveMemory(int64(len(mi.Payload)+len(mi.Attrs)) + 8*int64(len(mi.Vector)))
	if err != nil {
		return err
	}
	defer release()
	writeMemory(c, mi, true, withVector) // commands_batch.go
	return nil
}

// MEM.DEL coll (id | KEY k) [(id | KEY k) …]
// MEM.DEL coll FILTER expr
func (m memCommands) del(c *Ctx, args [][]byte) error {
	coll, err := m.coll(args[0])
	if err != nil {
		return err
	}
	if isFilterDel(args) {
		return m.delFilter(c, coll, args) // commands_filter.go
	}
	refs := make([]engine.Ref, 0, len(args)-1)
	for a := (argList{args: args, i: 1}); a.more(); {
		r, err := a.ref()
		if err != nil {
			return err
		}
		refs = append(refs, r)
	}
	n, ticket, err := coll.DeleteRefsDeferred(refs)
	if err != nil {
		return err
	}
	if err := c.AfterDurable(m.wait, uint64(ticket)); err != nil {
		return err
	}
	c.WriteInt(int64(n))
	return nil
}

// MEM.INFO coll
func (m memCommands) info(c *Ctx, args [][]byte) error {
	if len(args) != 1 {
		return c.WrongArity()
	}
	coll, err := m.coll(args[0])
	if err != nil {
		return err
	}
	in, err := coll.Info()
	if err != nil {
		return err
	}
	prune, err := infoPruneFields(coll) // commands_config.go
	if err != nil {
		return err
	}
	ss, err := coll.SnapshotStats() // commands_snapshot.go
	if err != nil {
		return err
	}
	c.WriteArrayHeader(20 + 4 + 2 + compactInfoLen)
	c.WriteBulkString("name")
	c.WriteBulkString(in.Name)
	c.WriteBulkString("dim")
	c.WriteInt(int64(in.Dim))
	c.WriteBulkString("metric")
	c.WriteBulkString(in.Metric.String())
	c.WriteBulkString("count")
	c.WriteInt(int64(in.Count))
	c.WriteBulkString("alpha")
	c.WriteFloat64(in.Alpha)
	c.WriteBulkString("gamma")
	c.WriteFloat64(in.Gamma)
	c.WriteBulkString("qinit")
	c.WriteFloat64(in.QInit)
	c.WriteBulkString("rows")
	c.WriteInt(int64(in.Rows))
	c.WriteBulkString("next_id")
	c.WriteInt(int64(in.NextID))
	c.WriteBulkString("index")
	c.WriteBulkString(in.Index)
	prune(c)
	c.WriteBulkString("snapshots")
	c.WriteInt(int64(ss.Snapshots))
	writeCompactInfo(c, coll) // commands_compact.go
	return nil
}

// MEM.CHECKPOINT [FULL]
func (m memCommands) checkpoint(c *Ctx, args [][]byte) error {
	if len(args) > 1 {
		return c.WrongArity()
	}
	checkpoint := m.db().Checkpoint
	if len(args) == 1 {
		if !strings.EqualFold(string(args[0]), "FULL") {
			return fmt.Errorf("syntax error: unknown MEM.CHECKPOINT option %q", args[0])
		}
		checkpoint = m.db().CheckpointFull
	}
	if err := checkpoint(); err != nil {
		return err
	}
	c.WriteOK()
	return nil
}

// MEM.VERIFY coll
//
// Checks every vector row, the checksum file and every live payload of the
// collection (and its IVF-PQ index) against their checksums. A clean
// collection gets a field/value summary; damage gets an ERR naming it.
func (m memCommands) verify(c *Ctx, args [][]byte) error {
	if len(args) != 1 {
		return c.WrongArity()
	}
	coll, err := m.coll(args[0])
	if err != nil {
		return err
	}
	rep, err := coll.Verify()
	if err != nil {
		return err
	}
	if err := rep.Err(); err != nil {
		return fmt.Errorf("collection %q: %w", coll.Name(), err)
	}
	sums := "checked"
	if !rep.SumsChecked {
		sums = "none"
	}
	c.WriteArrayHeader(12)
	c.WriteBulkString("rows")
	c.WriteInt(int64(rep.Rows))
	c.WriteBulkString("payloads")
	c.WriteInt(int64(rep.Payloads))
	c.WriteBulkString("legacy_payloads")
	c.WriteInt(int64(rep.LegacyPayloads))
	c.WriteBulkString("checksum_file")
	c.WriteBulkString(sums)
	c.WriteBulkString("index")
	c.WriteBulkString(rep.Index)
	c.WriteBulkString("damaged")
	c.WriteInt(int64(rep.Damaged))
	return nil
}

func (m memCommands) infoSection() [][2]string {
	st := m.db().CheckpointStatus()
	last, kind := "0", ""
	if !st.Last.IsZero() {
		last, kind = fmt.Sprint(st.Last.Unix()), "delta"
		if st.LastFull {
			kind = "full"
		}
	}
	stopped := ""
	if st.Stopped != nil {
		stopped = st.Stopped.Error()
	}
	return [][2]string{
		{"collections", fmt.Sprint(len(m.db().List()))},
		{"sync", m.db().SyncPolicy().String()},
		{"checkpoint_last_unix", last},
		{"checkpoint_last_kind", kind},
		{"checkpoint_last_ms", fmt.Sprint(st.Took.Milliseconds())},
		{"checkpoint_deltas", fmt.Sprint(st.Deltas)},
		{"checkpoint_failures", fmt.Sprint(st.Failures)},
		{"checkpoints_stopped", stopped},
	}
}
