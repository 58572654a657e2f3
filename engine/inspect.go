package engine

import (
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/cespare/xxhash/v2"

	"github.com/memrl/memrl/vfs"
	"github.com/memrl/memrl/wal"
)

// Inspection (memrl dump wal|checkpoint): the log's records and a
// checkpoint's contents in readable form, one line each, decoded by the
// same functions replay and recovery use. Read-only: nothing is opened
// for writing and no database is opened, so a live server's files can be
// read (a record or checkpoint being written may show as damage at the
// end). Damage stops the dump with an error naming the file and offset,
// after everything before it has been printed.

// DumpWAL prints the records of a log segment file, or of every segment
// of a log folder (a database's dir/wal, or the database folder itself),
// one line each: LSN, frame offset, type name and the record's fields.
func DumpWAL(w io.Writer, fs vfs.FS, path string) error {
	if fs == nil {
		fs = vfs.Default
	}
	paths := []string{path}
	if st, err := fs.Stat(path); err != nil {
		return err
	} else if st.IsDir() {
		dir := path
		if st, err := fs.Stat(filepath.Join(dir, "wal")); err == nil && st.IsDir() {
			dir = filepath.Join(dir, "wal") // a database folder
		}
		if paths, err = wal.SegmentPaths(fs, dir); err != nil {
			return err
		}
		if len(paths) == 0 {
			return fmt.Errorf("no log segments in %s", dir)
		}
	}
	dims := map[uint64]int{} // collection uid -> dimension, from the creates seen
	records := 0
	for _, p := range paths {
		err := wal.InspectSegment(fs, p, func(s wal.SegmentInfo) {
			fmt.Fprintf(w, "segment %s: number %d, first LSN %d, %d bytes\n", s.Path, s.Num, s.BaseLSN, s.Size)
		}, func(lsn wal.LSN, off int64, rec []byte) error {
			records++
			fmt.Fprintf(w, "%d\t@%d\t%s\n", lsn, off, describeRecord(rec, dims))
			return nil
		})
		if err != nil {
			return err
		}
	}
	fmt.Fprintf(w, "%d records\n", records)
	return nil
}

// recordNames names the record types this build knows.
var recordNames = map[byte]string{
	recCreate: "create", recDrop: "drop", recAdd: "add", recDelete: "delete", recQ: "q",
	recAddExt: "add", recSetAttrs: "setattrs", recSetPayload: "setpayload", recExpire: "expire",
	recIndexed: "indexed", recCreateIndexed: "create",
	recSnapshot: "snapshot", recDelSnapshot: "delsnapshot", recRollback: "rollback",
	recRollbackBatch: "rollback-batch", recPrunePolicy: "prune-policy",
	recGroupMember: "group-member", recGroupCommit: "group-commit", recGroupAbort: "group-abort",
	recRemap: "remap", recReplace: "replace", recImport: "import",
}

// describeRecord returns a record's type and fields on one line. dims
// maps collection uids to their dimension (creates add to it); an add to
// a collection created before the log's first record takes its dimension
// from its length. A record that does not decode is described as such:
// the log's checksum accepted it, so it is a bug or a newer build's type.
func describeRecord(rec []byte, dims map[uint64]int) string {
	if len(rec) == 0 {
		return "EMPTY record"
	}
	name, ok := recordNames[rec[0]]
	if !ok {
		return fmt.Sprintf("type %d (unknown to this build), %d bytes", rec[0], len(rec))
	}
	var s string
	var err error
	switch rec[0] {
	case recCreate, recCreateIndexed:
		var r createRec
		if r, err = decodeCreate(rec); err == nil {
			dims[r.uid] = r.cfg.Dim
			s = fmt.Sprintf("uid=%d name=%q %s", r.uid, r.name, describeConfig(r.cfg))
		}
	case recDrop:
		var uid uint64
		if uid, err = decodeDrop(rec); err == nil {
			s = fmt.Sprintf("uid=%d", uid)
		}
	case recAdd, recAddExt:
		dim := -1
		if uid, e := addRecUID(rec); e == nil {
			if d, ok := dims[uid]; ok {
				dim = d
			}
		}
		var r addRec
		if r, err = decodeAdd(rec, dim); err == nil {
			s = fmt.Sprintf("uid=%d id=%d row=%d payoff=%d paylen=%d created=%s q=%s dim=%d", r.uid, r.id, r.row, r.payOff,
				len(r.payload), fmtNanos(r.created), fmtF(r.q), len(r.vec))
			if r.key != "" {
				s += fmt.Sprintf(" key=%q", r.key)
			}
			if r.expires != 0 {
				s += " expires=" + fmtNanos(r.expires)
			}
			if len(r.attrs) > 0 {
				s += " attrs=" + clip(r.attrs)
			}
		}
	case recDelete:
		var r deleteRec
		if r, err = decodeDelete(rec); err == nil {
			s = fmt.Sprintf("uid=%d n=%d ids=%s", r.uid, len(r.ids), fmtIDs(r.ids))
		}
	case recQ:
		var r qRec
		if r, err = decodeQ(rec); err == nil {
			s = fmt.Sprintf("uid=%d id=%d q=%s visits=%d last_reward=%s reward_sum=%s updated=%s", r.uid, r.id, fmtF(r.q),
				r.visits, fmtF(r.lastReward), fmtF(r.rewardSum), fmtNanos(r.updated))
		}
	case recSetAttrs:
		var r setAttrsRec
		if r, err = decodeSetAttrs(rec); err == nil {
			s = fmt.Sprintf("uid=%d id=%d attrs=%s", r.uid, r.id, clip(r.attrs))
		}
	case recSetPayload:
		var r setPayloadRec
		if r, err = decodeSetPayload(rec); err == nil {
			s = fmt.Sprintf("uid=%d id=%d payoff=%d paylen=%d", r.uid, r.id, r.payOff, len(r.payload))
		}
	case recExpire:
		var r expireRec
		if r, err = decodeExpire(rec); err == nil {
			s = fmt.Sprintf("uid=%d id=%d expires=%s", r.uid, r.id, fmtNanos(r.expires))
		}
	case recIndexed:
		var r indexedRec
		if r, err = decodeIndexed(rec); err == nil {
			s = fmt.Sprintf("uid=%d fields=%s", r.uid, strings.Join(r.fields, ","))
		}
	case recSnapshot:
		var r snapshotRec
		if r, err = decodeSnapshot(rec); err == nil {
			s = fmt.Sprintf("uid=%d seq=%d name=%q created=%s memories=%d", r.uid, r.seq, r.name, fmtNanos(r.created), r.count)
		}
	case recDelSnapshot:
		var r delSnapshotRec
		if r, err = decodeDelSnapshot(rec); err == nil {
			s = fmt.Sprintf("uid=%d seq=%d", r.uid, r.seq)
		}
	case recRollback:
		var r rollbackRec
		if r, err = decodeRollback(rec); err == nil {
			s = fmt.Sprintf("uid=%d seq=%d changed=%d", r.uid, r.seq, r.n)
		}
	case recRollbackBatch:
		var uid uint64
		var b rbBatch
		if uid, b, err = decodeRollbackBatch(rec); err == nil {
			s = fmt.Sprintf("uid=%d deletes=%d changes=%d", uid, len(b.dels), len(b.changes))
		}
	case recGroupMember:
		var gid uint64
		var inner []byte
		if gid, inner, err = decodeGroupMember(rec); err == nil {
			s = fmt.Sprintf("gid=%d: %s", gid, describeRecord(inner, dims))
		}
	case recGroupCommit:
		var r groupCommitRec
		if r, err = decodeGroupCommit(rec); err == nil {
			s = fmt.Sprintf("gid=%d members=%d sum=%#x", r.gid, r.n, r.sum)
		}
	case recGroupAbort:
		var gid uint64
		if gid, err = decodeGroupAbort(rec); err == nil {
			s = fmt.Sprintf("gid=%d", gid)
		}
	case recRemap:
		var r remapRec
		if r, err = decodeRemap(rec); err == nil {
			s = fmt.Sprintf("uid=%d gen=%d rows=%d paysize=%d mapsum=%#x", r.uid, r.gen, r.nrows, r.paySize, r.mapSum)
		}
	case recReplace:
		dim := -1
		if uid, e := addRecUID(rec); e == nil {
			if d, ok := dims[uid]; ok {
				dim = d
			}
		}
		var r replaceRec
		if r, err = decodeReplace(rec, dim); err == nil {
			s = fmt.Sprintf("uid=%d id=%d row=%d dim=%d", r.uid, r.id, r.row, len(r.vec))
			if r.flags&replaceAttrs != 0 {
				s += " attrs=" + clip(r.attrs)
			}
			if r.flags&replacePayload != 0 {
				s += fmt.Sprintf(" payoff=%d paylen=%d", r.payOff, len(r.payload))
			}
		}
	case recImport: // collection_import.go
		var uid uint64
		var name string
		if uid, name, err = decodeImport(rec); err == nil {
			s = fmt.Sprintf("uid=%d name=%q", uid, name)
		}
	case recPrunePolicy:
		var r policyRec
		if r, err = decodePolicyRec(rec); err == nil {
			s = fmt.Sprintf("uid=%d kind=%d at=%s pruned=%d", r.uid, r.kind, fmtNanos(r.at), r.count)
		}
	}
	if err != nil {
		return fmt.Sprintf("%s UNDECODABLE (%d bytes): %v", name, len(rec), err)
	}
	return name + " " + s
}

func describeConfig(c Config) string {
	s := fmt.Sprintf("dim=%d metric=%s alpha=%s gamma=%s qinit=%s index=%s", c.Dim, c.Metric, fmtF(c.Alpha), fmtF(c.Gamma),
		fmtF(c.QInit), c.Index.Kind)
	if c.Index.Kind == IndexIVFPQ {
		s += fmt.Sprintf(" nlist=%d pqm=%d pqbits=%d train=%d", c.Index.NList, c.Index.PQM, c.Index.PQBits, c.Index.TrainThreshold)
	}
	if len(c.Indexed) > 0 {
		s += " indexed=" + strings.Join(c.Indexed, ",")
	}
	return s
}

func fmtF(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

// fmtNanos prints unix nanoseconds as UTC time (and 0 as 0).
func fmtNanos(ns int64) string {
	if ns == 0 {
		return "0"
	}
	return time.Unix(0, ns).UTC().Format("2006-01-02T15:04:05.000000000Z")
}

// fmtIDs prints up to 8 ids, then how many more.
func fmtIDs(ids []uint64) string {
	var b strings.Builder
	for i, id := range ids {
		if i == 8 {
			fmt.Fprintf(&b, ",…(+%d)", len(ids)-8)
			break
		}
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.FormatUint(id, 10))
	}
	return b.String()
}

// clip quotes up to 120 bytes of JSON or text.
func clip(b []byte) string {
	if len(b) > 120 {
		return strconv.Quote(string(b[:120])) + "…"
	}
	return strconv.Quote(string(b))
}

// sectionNames name the checkpoint section tags this build knows.
func collSectionName(tag uint16) string {
	if tag == sectTest {
		return "test"
	}
	return "tag " + strconv.Itoa(int(tag))
}

func memSectionName(tag uint16) string {
	switch tag {
	case memSectHistory:
		return "history"
	case memSectTest:
		return "test"
	}
	return "tag " + strconv.Itoa(int(tag))
}

// DumpCheckpoint prints a checkpoint file (CHECKPOINT or a delta,
// CHECKPOINT.<n>): its header, then per collection its config, counts,
// file sizes and sections (tag and length); with verbose, every memory
// and tombstone too, with its sections (a history's entries decoded).
// A file that fails its checksum is reported, and decoded as far as it
// goes; decoding stops at the first damage, reported with its offset.
func DumpCheckpoint(w io.Writer, fs vfs.FS, path string, verbose bool) error {
	if fs == nil {
		fs = vfs.Default
	}
	b, err := vfs.ReadFile(fs, path)
	if err != nil {
		return err
	}
	if len(b) < len(ckptMagic)+4+8 || string(b[:len(ckptMagic)]) != ckptMagic {
		return fmt.Errorf("%s: %w: bad magic (not a checkpoint file?)", path, ErrCorruptCheckpoint)
	}
	body, sum := b[:len(b)-8], le.Uint64(b[len(b)-8:])
	version := le.Uint32(b[len(ckptMagic):])
	fmt.Fprintf(w, "checkpoint %s: %d bytes, version %d\n", path, len(b), version)
	var sumErr error
	if got := xxhash.Sum64(body); got != sum {
		sumErr = fmt.Errorf("%s: %w: checksum %016x, computed %016x over bytes [0, %d): decoded anyway, trust nothing below",
			path, ErrCorruptCheckpoint, sum, got, len(body))
		fmt.Fprintf(w, "CHECKSUM MISMATCH: stored %016x, computed %016x\n", sum, got)
	}
	cp, off, err := decodeCheckpointBody(body)
	kind := map[uint8]string{ckptFull: "full", ckptDelta: "delta"}[cp.kind]
	fmt.Fprintf(w, "kind %s, chain %016x, seq %d, wal LSN %d, next uid %d, %d collections decoded\n",
		kind, cp.chainID, cp.seq, cp.walLSN, cp.nextUID, len(cp.colls))
	for _, c := range cp.colls {
		dumpCkptCollection(w, c, verbose)
	}
	if err != nil {
		return fmt.Errorf("%s: stopped at byte %d: %w", path, off, err)
	}
	return sumErr
}

func dumpCkptCollection(w io.Writer, c ckptCollection, verbose bool) {
	fmt.Fprintf(w, "collection uid=%d name=%q %s\n", c.uid, c.name, describeConfig(c.cfg))
	var withSect, hist, histEntries int
	for _, m := range c.mems {
		if len(m.sections) > 0 {
			withSect++
		}
		for _, s := range m.sections {
			if s.tag == memSectHistory {
				hist++
				if es, _, err := decodeHistLog(s.data[1:]); err == nil {
					histEntries += len(es)
				}
			}
		}
	}
	fmt.Fprintf(w, "  memories=%d tombstones=%d rows=%d payload_bytes=%d next_id=%d memories_with_sections=%d histories=%d history_entries=%d\n",
		len(c.mems), len(c.tombs), c.nrows, c.paySize, c.nextID, withSect, hist, histEntries)
	for _, s := range c.sections {
		fmt.Fprintf(w, "  section %s (tag %d): %d bytes\n", collSectionName(s.tag), s.tag, len(s.data))
	}
	if !verbose {
		return
	}
	if len(c.tombs) > 0 {
		fmt.Fprintf(w, "  tombstones: %s\n", fmtIDs(c.tombs))
	}
	for _, m := range c.mems {
		x := m.m.extOrZero()
		fmt.Fprintf(w, "  memory id=%d row=%d payoff=%d paylen=%d created=%s q=%s visits=%d last_reward=%s reward_sum=%s updated=%s",
			m.id, m.m.row, m.m.payOff, m.m.payLen, fmtNanos(m.m.created), fmtF(m.q), m.visits, fmtF(m.lastReward),
			fmtF(m.rewardSum), fmtNanos(m.updated))
		if x.key != "" {
			fmt.Fprintf(w, " key=%q", x.key)
		}
		if x.expires != 0 {
			fmt.Fprintf(w, " expires=%s", fmtNanos(x.expires))
		}
		if len(x.attrs) > 0 {
			fmt.Fprintf(w, " attrs=%s", clip(x.attrs))
		}
		fmt.Fprintln(w)
		for _, s := range m.sections {
			fmt.Fprintf(w, "    section %s (tag %d): %d bytes\n", memSectionName(s.tag), s.tag, len(s.data))
			if s.tag == memSectHistory {
				es, lsn, _ := decodeHistLog(s.data[1:]) // checked when decoded
				fmt.Fprintf(w, "      newest entry's record LSN %d\n", lsn)
				for i := len(es) - 1; i >= 0; i-- {
					e := es[i]
					fmt.Fprintf(w, "      %s reward=%s q=%s visits=%d\n", time.UnixMilli(e.ms).UTC().Format("2006-01-02T15:04:05.000Z"),
						fmtF(e.reward), fmtF(e.q), e.visits)
				}
			}
		}
	}
}

// DumpVectors prints the header of a collection's vector checksum file
// (vectors.sum: format version, dimension, where pre-checksum payloads
// end) and how many row checksums follow it, and the rows of vectors.f32
// beside it. path is either file.
func DumpVectors(w io.Writer, fs vfs.FS, path string) error {
	if fs == nil {
		fs = vfs.Default
	}
	dir, base := filepath.Split(path)
	sums, vecs := path, filepath.Join(dir, "vectors.f32")
	if base == "vectors.f32" {
		sums = filepath.Join(dir, "vectors.sum")
	}
	b, err := vfs.ReadFile(fs, sums)
	if err != nil {
		return err
	}
	h, err := decodeSumsHeader(b, sums)
	if err != nil {
		return err
	}
	rows := (len(b) - sumsHeaderSize) / 8
	fmt.Fprintf(w, "vector checksums %s: %d bytes, version %d, dim %d, legacy payload end %d, %d row checksums",
		sums, len(b), le.Uint32(b[8:12]), h.dim, h.legacyPayloadEnd, rows)
	if rest := (len(b) - sumsHeaderSize) % 8; rest != 0 {
		fmt.Fprintf(w, " and %d trailing bytes (a torn last checksum)", rest)
	}
	fmt.Fprintln(w)
	if st, err := fs.Stat(vecs); err == nil && h.dim > 0 {
		row := 4 * int64(h.dim)
		// The file grows in steps: the checksums count the rows written.
		fmt.Fprintf(w, "vectors %s: %d bytes, room for %d rows of %d float32", vecs, st.Size(), st.Size()/row, h.dim)
		if rest := st.Size() % row; rest != 0 {
			fmt.Fprintf(w, " and %d trailing bytes (a torn last row)", rest)
		}
		fmt.Fprintln(w)
	}
	return nil
}
