package engine

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
)

// maxReportedDamage bounds the damage a VerifyReport lists one by one.
const maxReportedDamage = 16

// VerifyReport is what Collection.Verify found.
type VerifyReport struct {
	Rows           int      // vector rows checked: every row of the file, live or dead
	SumsChecked    bool     // the checksum file was read and compared too
	Payloads       int      // live memories' payloads checked
	LegacyPayloads int      // live payloads from before checksums: read, not checkable
	Index          string   // "none", "ok", or the index's damage
	Damaged        int      // damaged rows and payloads (and 1 for a damaged index)
	Damage         []Damage // the first maxReportedDamage of them: vectors by row, then payloads by offset

	badRows []uint32 // every row whose vector (or its checksum) is damaged
}

// Damage is one damaged piece of a collection.
type Damage struct {
	What   string // "vector", "checksum" (vectors.sum disagrees), "payload" or "index"
	ID     uint64 // the memory it belongs to; 0 for a dead row or the index
	Row    uint32 // the vector row (vector, checksum, and payload damage)
	Offset int64  // byte offset in the file named by What
	Err    string
}

func (d Damage) String() string {
	if d.What == "index" {
		return "index: " + d.Err
	}
	who := fmt.Sprintf("memory %d", d.ID)
	if d.ID == 0 {
		who = "dead row"
	}
	return fmt.Sprintf("%s %s row %d offset %d", who, d.What, d.Row, d.Offset)
}

// add records one damage.
func (r *VerifyReport) add(d Damage) {
	r.Damaged++
	if len(r.Damage) < maxReportedDamage {
		r.Damage = append(r.Damage, d)
	}
}

// Err summarises the damage as an error wrapping ErrCorrupt, or nil.
func (r *VerifyReport) Err() error {
	if r.Damaged == 0 {
		return nil
	}
	s := make([]string, len(r.Damage))
	for i, d := range r.Damage {
		s[i] = d.String()
	}
	more := ""
	if r.Damaged > len(r.Damage) {
		more = fmt.Sprintf(", and %d more", r.Damaged-len(r.Damage))
	}
	return fmt.Errorf("%w: %d damaged: %s%s", ErrCorrupt, r.Damaged, joinComma(s), more)
}

func joinComma(s []string) string {
	out := ""
	for i, x := range s {
		if i > 0 {
			out += ", "
		}
		out += x
	}
	return out
}

// verifyChunk is how many rows, or payloads, Verify checks per hold of the
// collection's read lock, so that an add (and whatever queues behind it)
// waits for one chunk, not for the whole collection.
var verifyChunk = 4096 // a variable so that tests can make chunks tiny

// Verify checks the whole collection against its checksums: every vector
// row (live or dead) against the checksum in memory (read from the vector
// file, and for resident vectors also the copy searches read), the checksum file
// against that copy, every live memory's payload, and the IVF-PQ index's
// lists if it has one. Damage is reported, and logged, never repaired:
// delete the memories it names (or restore from a copy); the index alone,
// derived from the vectors, is rebuilt (index_damage.go). It takes the
// collection's read lock per chunk of verifyChunk rows or payloads, so
// writes go on meanwhile; it checks the rows there were when it started,
// and the payloads of the memories live then and still live when their
// chunk is checked.
func (c *Collection) Verify() (VerifyReport, error) {
	rep, err := c.verify(c.rlockLive, c.mu.RUnlock, true)
	if err != nil {
		return rep, err
	}
	if rep.Damaged > 0 {
		c.db.opts.Logf("memrl: collection %q: verify: %v", c.name, rep.Err())
	}
	return rep, nil
}

// errFilesReplaced is Verify's error when a compaction replaced the
// collection's files while it ran: the rows and payload offsets it was
// checking belong to the files before. Nothing is damaged; verify again.
var errFilesReplaced = errors.New("the collection was compacted while it was verified: verify again")

// payloadRef names a payload to check.
type payloadRef struct {
	id, off uint64
}

// verify is Verify, taking the collection's lock with lock and unlock
// around each chunk (Open, which has the collection to itself, passes
// no-ops). readFile reads resident rows back from the vector file as well
// as checking the copy; Open, which has just read the copy from the file,
// passes false. An error means the check could not run (the collection was
// dropped, a file could not be opened or read), not damage.
func (c *Collection) verify(lock func() error, unlock func(), readFile bool) (VerifyReport, error) {
	var rep VerifyReport
	if err := lock(); err != nil {
		return rep, err
	}
	end, gen := c.vecs.nrows, c.gen
	rep.SumsChecked = !c.vecs.legacy
	err := c.vecs.checkSumsHeader()
	unlock()
	if err != nil {
		return rep, err
	}
	// relock takes the lock for the next chunk, failing if a compaction
	// has replaced the files the rows and offsets noted refer to.
	relock := func() error {
		if err := lock(); err != nil {
			return err
		}
		if c.gen != gen {
			unlock()
			return errFilesReplaced
		}
		return nil
	}
	for from := uint32(0); from < end; {
		if err := relock(); err != nil {
			return rep, err
		}
		// An add whose log write failed takes its row back (rows only
		// shrink so); the rows past it were never a memory's.
		to := min(from+uint32(verifyChunk), end, c.vecs.nrows)
		if from >= to {
			unlock()
			break
		}
		err := c.verifyRowsLocked(&rep, from, to, readFile)
		unlock()
		if err != nil {
			return rep, err
		}
		from = to
	}

	if err := relock(); err != nil {
		return rep, err
	}
	refs := make([]payloadRef, 0, len(c.mems))
	for id, m := range c.mems {
		refs = append(refs, payloadRef{id, m.payOff})
	}
	unlock()
	slices.SortFunc(refs, func(a, b payloadRef) int { return cmp.Compare(a.off, b.off) })
	for i := 0; i < len(refs); i += verifyChunk {
		if err := relock(); err != nil {
			return rep, err
		}
		err := c.verifyPayloadsLocked(&rep, refs[i:min(i+verifyChunk, len(refs))])
		unlock()
		if err != nil {
			return rep, err
		}
	}

	if err := lock(); err != nil {
		return rep, err
	}
	defer unlock()
	rep.Index = "none"
	if c.ivf != nil {
		rep.Index = "ok"
		if err := c.ivf.Verify(); err != nil {
			rep.Index = err.Error()
			rep.add(Damage{What: "index", Err: err.Error()})
			if isIndexDamage(err) {
				c.indexDamaged(c.ivf, err) // rebuilt, and searched around meanwhile
			}
		}
	}
	return rep, nil
}

// verifyRowsLocked checks rows [from, to) against their checksums in
// memory, and the checksum file's copies against those; with readFile, a
// resident store's rows are also read back from the vector file.
// REQUIRES: c.mu held at least for reading; to <= c.vecs.nrows.
func (c *Collection) verifyRowsLocked(rep *VerifyReport, from, to uint32, readFile bool) error {
	v := c.vecs
	fileSums, err := v.fileSums(from, to)
	if err != nil {
		return err
	}
	var fileRows []float32 // rows [from, to) as the vector file holds them, when they are not what row reads
	if readFile && v.resident {
		if fileRows, err = v.readRows(from, to); err != nil {
			return err
		}
	}
	onFile := func(r uint32) bool {
		return fileRows == nil || rowSum(r, fileRows[int(r-from)*v.dim:int(r-from+1)*v.dim]) == v.sums[r]
	}
	for r := from; r < to; r++ {
		rep.Rows++
		switch {
		case rowSum(r, v.row(r)) != v.sums[r] || !onFile(r):
			rep.add(Damage{What: "vector", ID: c.liveIDLocked(r), Row: r, Offset: int64(r) * v.rowSize})
			rep.badRows = append(rep.badRows, r)
		case fileSums[r-from] != v.sums[r]:
			rep.add(Damage{What: "checksum", ID: c.liveIDLocked(r), Row: r, Offset: sumsOffset(r)})
			rep.badRows = append(rep.badRows, r)
		}
	}
	return nil
}

// verifyPayloadsLocked checks the payloads refs name, skipping those whose
// memory was deleted (or deleted and added again) since refs were taken.
// Records that lie close together in the file (refs are sorted by offset)
// are read with one read, not one each: Open checks every payload, and a
// read per payload was most of the time to open a collection of a million
// memories (bench/README.md "Cold open").
// REQUIRES: c.mu held at least for reading; refs sorted by offset.
func (c *Collection) verifyPayloadsLocked(rep *VerifyReport, refs []payloadRef) error {
	live := make([]payloadRef, 0, len(refs))
	var need, end uint64
	for _, ref := range refs {
		m, ok := c.mems[ref.id]
		if !ok || m.payOff != ref.off {
			continue
		}
		if !c.pays.checked(m.payOff) {
			rep.LegacyPayloads++
			continue
		}
		live = append(live, ref)
		n := c.pays.recordLen(m.payOff, m.payLen)
		need += n
		end = max(end, m.payOff+n)
	}
	if len(live) == 0 {
		return nil
	}
	var span []byte
	if from := live[0].off; end-from <= maxVerifySpan && end-from <= 2*need+verifySpanSlack {
		// An error (a file cut short, say) leaves span nil: the records
		// are then read one by one below, which names each damaged one.
		span, _ = c.pays.readSpan(from, end)
	}
	for _, ref := range live {
		m := c.mems[ref.id]
		rep.Payloads++
		var err error
		if span != nil {
			rel := m.payOff - live[0].off
			_, err = c.pays.checkRecord(ref.id, m.payOff, m.payLen, span[rel:rel+c.pays.recordLen(m.payOff, m.payLen)])
		} else {
			_, err = c.pays.get(ref.id, m.payOff, m.payLen)
		}
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				return err
			}
			rep.add(Damage{What: "payload", ID: ref.id, Row: m.row, Offset: int64(m.payOff), Err: err.Error()})
		}
	}
	return nil
}

// maxVerifySpan bounds the bytes verifyPayloadsLocked reads at once, and
// verifySpanSlack with twice the records' own bytes the span it reads for
// them, so that payloads scattered among deleted ones are read one by one
// rather than with the dead bytes between them.
const (
	maxVerifySpan   = 8 << 20
	verifySpanSlack = 64 << 10
)

// liveIDLocked returns the id of the live memory at row r, or 0.
// REQUIRES: c.mu held at least for reading.
func (c *Collection) liveIDLocked(r uint32) uint64 {
	if int(r) >= len(c.rowIDs) {
		return 0
	}
	id := c.rowIDs[r]
	if m, ok := c.mems[id]; ok && m.row == r {
		return id
	}
	return 0
}

// reportLocked logs err if it reports damage, and returns it.
// REQUIRES: c.mu held at least for reading.
func (c *Collection) reportLocked(err error) error {
	if errors.Is(err, ErrCorrupt) {
		c.db.opts.Logf("memrl: collection %q: %v", c.name, err)
	}
	return err
}

// openChecksLocked runs at Open, after replay: it migrates a collection
// from before checksums (writing its checksum file) and verifies the whole
// collection. Damage is logged, and damaged vector rows are left out of
// searches from then on (as tombstones are), so that retrievals go on
// while Get and MEM.VERIFY keep reporting them; an error means the files
// could not be read, and stops Open.
// REQUIRES: c not yet shared (Open has not returned).
func (c *Collection) openChecksLocked() error {
	if c.vecs.legacy {
		end := c.pays.size
		if err := c.vecs.migrateSums(end); err != nil {
			return fmt.Errorf("engine: collection %q: writing its checksum file: %w", c.name, err)
		}
		if err := c.db.fs.SyncDir(c.dir); err != nil {
			return err
		}
		c.pays.legacyEnd = end
		c.db.opts.Logf("memrl: collection %q: upgraded to checksummed files: %d vector rows summed as found; the %d payload bytes written before stay unchecked", c.name, c.vecs.nrows, end)
	}
	rep, err := c.verify(func() error { return nil }, func() {}, false)
	if err != nil {
		return fmt.Errorf("engine: collection %q: verifying its files: %w", c.name, err)
	}
	if rep.Damaged > 0 {
		c.db.opts.Logf("memrl: collection %q: damaged files found at open (searches skip damaged vectors; delete the memories named): %v", c.name, rep.Err())
		for _, r := range rep.badRows {
			c.dead.Add(r)
		}
	}
	return nil
}
