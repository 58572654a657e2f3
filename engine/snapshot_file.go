package engine

import (
	"fmt"
	"path/filepath"

	"github.com/memrl/memrl/engine/snapfile"
	"github.com/memrl/memrl/vfs"
)

// A snapshot file (collections/<uid>/snapshots/<seq>.snap) holds the state
// of every live memory of a collection at the moment MEM.SNAPSHOT ran; its
// format is package snapfile's. A file that fails its checksum, has
// another version, or names another collection or sequence number is
// damaged (errSnapshotDamaged): see snapshot.go for what Open does then.

// errSnapshotDamaged wraps every failure to decode a snapshot file.
var errSnapshotDamaged = snapfile.ErrDamaged

// snapEntry is one memory's state in a snapshot.
type snapEntry = snapfile.Entry

// snapFile is a decoded snapshot file.
type snapFile = snapfile.File

func (c *Collection) snapshotDir() string { return filepath.Join(c.dir, "snapshots") }

func (c *Collection) snapshotPath(seq uint64) string {
	return filepath.Join(c.snapshotDir(), fmt.Sprintf("%016x.snap", seq))
}

func encodeSnapFile(f snapFile) []byte { return snapfile.Encode(f) }

// decodeSnapFile decodes and checks a snapshot file that should be
// snapshot seq of collection uid. Keys and attributes are copied.
func decodeSnapFile(b []byte, uid, seq uint64) (snapFile, error) {
	return snapfile.Decode(b, uid, seq)
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
	return vfs.WriteFileAtomic(fs, c.snapshotPath(f.Seq), encodeSnapFile(f))
}

// readSnapFile reads and checks snapshot seq's file.
func (c *Collection) readSnapFile(seq uint64) (snapFile, error) {
	b, err := vfs.ReadFile(c.db.fs, c.snapshotPath(seq))
	if err != nil {
		return snapFile{}, err
	}
	return decodeSnapFile(b, c.uid, seq)
}
