package engine

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"

	"github.com/cespare/xxhash/v2"

	"github.com/memrl/memrl/vfs"
)

// A snapshot file (collections/<uid>/snapshots/<seq>.snap) holds the state
// of every live memory of a collection at the moment MEM.SNAPSHOT ran:
// everything MEM.ROLLBACK restores, and nothing that compaction may move
// (no rows, no payload offsets: a snapshot copies no vector). It is
// written once, atomically (vfs.CreateAtomic: temporary file, fsync,
// rename, folder fsync), and never changed.
//
//	+------------+---------+-----+-----+-----+---------+-------------+---------+-------+
//	| "MEMRLSNP" | version | uid | seq | created | name        | count   | entries | xxh64 |
//	| 8 bytes    | u32 = 1 | u64 | u64 | i64     | u16-len     | u64     |         | u64   |
//	+------------+---------+-----+-----+-----+---------+-------------+---------+-------+
//
//	entry: id u64 | q f64 | visits u64 | lastReward f64 | rewardSum f64 | updated i64 |
//	       expires i64 | key u16-len bytes | attrs u32-len bytes
//
// Entries are in ascending id order, each id once. The trailing xxh64
// covers every byte before it. A file that fails its checksum, has another
// version, or names another collection or sequence number is damaged
// (errSnapshotDamaged): see snapshot.go for what Open does then.
const (
	snapMagic   = "MEMRLSNP"
	snapVersion = 1
	snapHeader  = 8 + 4 + 8 + 8 + 8 // magic .. created; then the name
)

// errSnapshotDamaged wraps every failure to decode a snapshot file.
var errSnapshotDamaged = errors.New("snapshot file damaged")

// snapEntry is one memory's state in a snapshot.
type snapEntry struct {
	id         uint64
	q          float64
	visits     uint64
	lastReward float64
	rewardSum  float64
	updated    int64
	expires    int64
	key        string
	attrs      []byte // compact JSON object, or nil
}

// snapFile is a decoded snapshot file.
type snapFile struct {
	uid, seq uint64
	created  int64
	name     string
	entries  []snapEntry // ascending ids
}

func (c *Collection) snapshotDir() string { return filepath.Join(c.dir, "snapshots") }

func (c *Collection) snapshotPath(seq uint64) string {
	return filepath.Join(c.snapshotDir(), fmt.Sprintf("%016x.snap", seq))
}

func encodeSnapFile(f snapFile) []byte {
	n := snapHeader + 2 + len(f.name) + 8 + 8
	for _, e := range f.entries {
		n += 62 + len(e.key) + len(e.attrs)
	}
	b := make([]byte, 0, n)
	b = append(b, snapMagic...)
	b = le.AppendUint32(b, snapVersion)
	b = le.AppendUint64(b, f.uid)
	b = le.AppendUint64(b, f.seq)
	b = le.AppendUint64(b, uint64(f.created))
	b = le.AppendUint16(b, uint16(len(f.name)))
	b = append(b, f.name...)
	b = le.AppendUint64(b, uint64(len(f.entries)))
	for _, e := range f.entries {
		b = appendSnapEntry(b, e)
	}
	return le.AppendUint64(b, xxhash.Sum64(b))
}

// decodeSnapFile decodes and checks a snapshot file that should be
// snapshot seq of collection uid. Keys and attributes are copied.
func decodeSnapFile(b []byte, uid, seq uint64) (snapFile, error) {
	var f snapFile
	if len(b) < snapHeader+8 || string(b[:8]) != snapMagic {
		return f, fmt.Errorf("%w: not a snapshot file", errSnapshotDamaged)
	}
	body := b[:len(b)-8]
	if xxhash.Sum64(body) != le.Uint64(b[len(b)-8:]) {
		return f, fmt.Errorf("%w: checksum mismatch", errSnapshotDamaged)
	}
	d := decoder{b: body[8:]}
	if v := d.u32(); v != snapVersion {
		return f, fmt.Errorf("%w: version %d, this build reads %d", errSnapshotDamaged, v, snapVersion)
	}
	f.uid, f.seq, f.created = d.u64(), d.u64(), int64(d.u64())
	f.name = string(d.take(int(d.u16())))
	n := d.u64()
	if d.err || n > uint64(len(d.b))/62 {
		return f, fmt.Errorf("%w: bad header", errSnapshotDamaged)
	}
	if f.uid != uid || f.seq != seq {
		return f, fmt.Errorf("%w: holds snapshot %d of collection %d, want %d of %d", errSnapshotDamaged, f.seq, f.uid, seq, uid)
	}
	f.entries = make([]snapEntry, n)
	for i := range f.entries {
		e := &f.entries[i]
		e.id = d.u64()
		decodeSnapEntryRest(&d, e)
		if d.err {
			return f, fmt.Errorf("%w: truncated entry %d", errSnapshotDamaged, i)
		}
		if i > 0 && e.id <= f.entries[i-1].id {
			return f, fmt.Errorf("%w: ids out of order at entry %d", errSnapshotDamaged, i)
		}
	}
	if len(d.b) != 0 {
		return f, fmt.Errorf("%w: %d bytes past the entries", errSnapshotDamaged, len(d.b))
	}
	return f, nil
}

// writeSnapFile writes f atomically and durably. It holds no lock: the
// caller serialises snapshot operations (c.snapMu).
func (c *Collection) writeSnapFile(f snapFile) error {
	fs := c.db.fs
	if err := fs.MkdirAll(c.snapshotDir(), 0o755); err != nil {
		return fdError(err)
	}
	// The folder's name must survive a crash before the file's does.
	if err := fs.SyncDir(c.dir); err != nil {
		return err
	}
	return vfs.WriteFileAtomic(fs, c.snapshotPath(f.seq), encodeSnapFile(f))
}

// readSnapFile reads and checks snapshot seq's file.
func (c *Collection) readSnapFile(seq uint64) (snapFile, error) {
	b, err := vfs.ReadFile(c.db.fs, c.snapshotPath(seq))
	if err != nil {
		return snapFile{}, err
	}
	return decodeSnapFile(b, c.uid, seq)
}

// appendSnapEntry appends e as snapshot files and rollback records hold
// it: id u64 | q f64 | visits u64 | lastReward f64 | rewardSum f64 |
// updated i64 | expires i64 | key u16-len bytes | attrs u32-len bytes.
func appendSnapEntry(b []byte, e snapEntry) []byte {
	b = le.AppendUint64(b, e.id)
	b = putF64(b, e.q)
	b = le.AppendUint64(b, e.visits)
	b = putF64(b, e.lastReward)
	b = putF64(b, e.rewardSum)
	b = le.AppendUint64(b, uint64(e.updated))
	b = le.AppendUint64(b, uint64(e.expires))
	b = le.AppendUint16(b, uint16(len(e.key)))
	b = append(b, e.key...)
	b = le.AppendUint32(b, uint32(len(e.attrs)))
	return append(b, e.attrs...)
}

// decodeSnapEntryRest decodes what follows the id in appendSnapEntry's
// layout into e; the key and attributes are copied. A short input sets
// d.err.
func decodeSnapEntryRest(d *decoder, e *snapEntry) {
	e.q, e.visits, e.lastReward, e.rewardSum = d.f64(), d.u64(), d.f64(), d.f64()
	e.updated, e.expires = int64(d.u64()), int64(d.u64())
	e.key = string(d.take(int(d.u16())))
	if an := d.u32(); an > 0 {
		e.attrs = slices.Clone(d.take(int(an)))
	}
}
