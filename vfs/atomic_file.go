package vfs

import (
	"fmt"
	"io"
	"path/filepath"
)

// atomicTempSuffix names the temporary file an AtomicFile writes first.
// A leftover one (from a crash) is harmless and is overwritten next time.
const atomicTempSuffix = ".tmp"

// AtomicFile writes a file that replaces another atomically: after a crash
// at any point, the path holds either its old contents or everything
// written before Commit, never a mix. Create one with CreateAtomic, Write
// to it, then call Commit to publish it or Abort to discard it. You must
// call one of the two exactly once, even after a failed Write.
//
// It writes path+".tmp", fsyncs it, renames it over path, and fsyncs the
// directory. (Without the first fsync, a crash after the rename could leave
// path naming a file whose data never reached the disk.)
//
// Large files are written back as they are written, writeBackChunk at a
// time and paced (see SyncPaced), so the final fsync has little left to do
// and the WAL's fsyncs are never queued behind tens of megabytes.
//
// Not safe for concurrent use.
type AtomicFile struct {
	fs       FS
	path     string
	f        File
	written  int64 // bytes written so far
	backedTo int64 // bytes [0, backedTo) have been written back
	err      error // the first failure; Commit returns it
	keepOld  bool  // the replaced version may be mapped: never shrink it
}

// CreateAtomic starts writing a new version of the file at path.
func CreateAtomic(fs FS, path string) (*AtomicFile, error) {
	f, err := fs.Create(path + atomicTempSuffix)
	if err != nil {
		return nil, err
	}
	return &AtomicFile{fs: fs, path: path, f: f}, nil
}

// CreateAtomicMapped is CreateAtomic for a file that readers map: Commit
// leaves the replaced version's space to the file system (freed when its
// last handle and mapping go) instead of shrinking it in paced steps, since
// a reader touching a page of a mapped file that was truncated away faults
// (SIGBUS). The IVF-PQ index file is written this way.
func CreateAtomicMapped(fs FS, path string) (*AtomicFile, error) {
	a, err := CreateAtomic(fs, path)
	if err != nil {
		return nil, err
	}
	a.keepOld = true
	return a, nil
}

// Write appends p to the new version. After a failure every later Write
// and Commit returns the same error.
func (a *AtomicFile) Write(p []byte) (int, error) {
	if a.err != nil {
		return 0, a.err
	}
	n, err := a.f.Write(p)
	a.written += int64(n)
	if err != nil {
		a.err = err
		return n, err
	}
	// Write back the whole chunks written so far; the rest waits for
	// more, or for Commit.
	if wb, ok := a.f.(WriteBacker); ok {
		if to := a.written - a.written%writeBackChunk; to > a.backedTo {
			if err := writeBackPaced(wb, a.backedTo, to); err != nil {
				a.err = err
				return n, err
			}
			a.backedTo = to
		}
	}
	return n, nil
}

// WriteAt overwrites bytes of the new version already written: REQUIRES
// off >= 0 and off+len(p) <= the bytes written so far. It lets a writer
// reserve a header, stream the body, and fill the header in last. After a
// failure every later call and Commit returns the same error.
func (a *AtomicFile) WriteAt(p []byte, off int64) (int, error) {
	if a.err != nil {
		return 0, a.err
	}
	if off < 0 || off+int64(len(p)) > a.written {
		a.err = fmt.Errorf("vfs: AtomicFile.WriteAt [%d, %d) past the %d bytes written", off, off+int64(len(p)), a.written)
		return 0, a.err
	}
	n, err := a.f.WriteAt(p, off)
	if err != nil {
		a.err = err
	}
	return n, err
}

// Commit makes the new version durable and puts it in place of the old
// one. Once it returns nil the new contents survive a crash; if it fails,
// the path holds the old contents or (only if the final directory sync
// failed) possibly the new ones.
//
// The old version's space is freed after the new one is in place, in
// paced steps (ReleasePaced): renaming over a large file would free it
// all at once and hold up every fsync on the device.
func (a *AtomicFile) Commit() error {
	tmp := a.path + atomicTempSuffix
	if a.err != nil {
		a.Abort()
		return a.err
	}
	if err := SyncPaced(a.f, a.backedTo, a.written); err != nil {
		a.Abort()
		return err
	}
	if err := a.f.Close(); err != nil {
		a.fs.Remove(tmp)
		return err
	}
	var old File
	if !a.keepOld {
		var err error
		if old, err = openToRelease(a.fs, a.path); err != nil {
			a.fs.Remove(tmp)
			return err
		}
	}
	if err := a.fs.Rename(tmp, a.path); err != nil {
		closeIfOpen(old)
		a.fs.Remove(tmp)
		return err
	}
	if err := a.fs.SyncDir(filepath.Dir(a.path)); err != nil {
		closeIfOpen(old)
		return err
	}
	if old != nil {
		// The new version is durable and in place; failing to free the
		// old one's space early is not worth failing the commit for
		// (closing the handle frees the rest).
		ReleasePaced(old)
	}
	return nil
}

func closeIfOpen(f File) {
	if f != nil {
		f.Close()
	}
}

// Abort discards the new version; the old one stays.
func (a *AtomicFile) Abort() {
	a.f.Close()
	a.fs.Remove(a.path + atomicTempSuffix)
}

// WriteFileAtomic replaces the file at path with data, as an AtomicFile
// does: after a crash path holds its old contents or data, and once it
// returns nil the new contents are durable.
func WriteFileAtomic(fs FS, path string, data []byte) error {
	a, err := CreateAtomic(fs, path)
	if err != nil {
		return err
	}
	for len(data) > 0 {
		n := min(len(data), writeBackChunk)
		if _, err := a.Write(data[:n]); err != nil {
			break // Commit reports it
		}
		data = data[n:]
	}
	return a.Commit()
}

// ReadFile returns the contents of the file at path.
func ReadFile(fs FS, path string) ([]byte, error) {
	f, err := fs.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	buf := make([]byte, st.Size())
	n, err := io.ReadFull(f, buf)
	if err == io.ErrUnexpectedEOF {
		// The file shrank since Stat; return what is there.
		return buf[:n], nil
	}
	if err != nil {
		return nil, err
	}
	// Read any bytes appended since Stat.
	rest, err := io.ReadAll(f)
	if err != nil {
		return nil, err
	}
	return append(buf, rest...), nil
}
