package vfs

import (
	"errors"
	iofs "io/fs"
	"path/filepath"
	"time"
)

// releaseChunk is how many bytes ReleasePaced frees at a time.
const releaseChunk = 1 << 20

// releaseRest is the least ReleasePaced rests between chunks.
const releaseRest = time.Millisecond

// ReleasePaced frees the disk space of a file whose last name is gone,
// through an open handle f: it shrinks the file releaseChunk at a time,
// syncing each step and resting for as long as the step took (at least
// releaseRest), then closes f. The caller must have removed (or renamed
// over) the file's name and synced its directory first, so that a crash
// midway never shows a half-shrunk file under a live name; a crash leaves
// an orphan the file system frees when it mounts.
//
// Why: unlinking a file that is tens of megabytes frees all its blocks in
// one journal transaction (and, on a file system mounted with discard,
// trims them all when it commits). Every fsync on the device, the WAL's
// among them, waits for that commit: a measured 12-14 ms for a 72 MB file
// on the development VM, against under 1 ms when shrunk in paced steps.
// (RocksDB's DeleteScheduler truncates large files in chunks for the same
// reason.)
//
// f is closed even when a step fails; the error is returned and the rest of
// the space is freed when f is closed.
func ReleasePaced(f File) error {
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return err
	}
	for size := st.Size(); size > 0; {
		size = max(size-releaseChunk, 0)
		t := time.Now()
		if err := f.Truncate(size); err != nil {
			f.Close()
			return err
		}
		if err := f.Sync(); err != nil {
			f.Close()
			return err
		}
		if size > 0 {
			time.Sleep(max(time.Since(t), releaseRest))
		}
	}
	return f.Close()
}

// openToRelease opens an existing file read-write so that ReleasePaced can
// free its space after its name is removed. It returns nil, nil when the
// file does not exist.
func openToRelease(fs FS, name string) (File, error) {
	if _, err := fs.Stat(name); err != nil {
		if errors.Is(err, iofs.ErrNotExist) {
			return nil, nil
		}
		return nil, err
	}
	return fs.OpenReadWrite(name)
}

// heldFiles are open handles of files whose names are being removed.
type heldFiles []File

func (h heldFiles) close() {
	for _, f := range h {
		f.Close()
	}
}

// release frees each file's space (ReleasePaced closes it; a failure
// leaves the rest of that file to the close).
func (h heldFiles) release() {
	for _, f := range h {
		ReleasePaced(f)
	}
}

// RemoveFilesPaced removes the files at paths, all in folder dir, in the
// order given, makes the removals durable with one SyncDir(dir), and then
// frees their space in paced steps (ReleasePaced): each file is opened
// before its name goes. A path that does not exist is skipped. Used for log
// segments and checkpoint files, tens of megabytes each.
func RemoveFilesPaced(fs FS, dir string, paths []string) error {
	var held heldFiles
	for _, p := range paths {
		f, err := openToRelease(fs, p)
		if err != nil {
			held.close()
			return err
		}
		if f == nil {
			continue
		}
		held = append(held, f)
		if err := fs.Remove(p); err != nil {
			held.close()
			return err
		}
	}
	if len(held) == 0 {
		return nil
	}
	if err := fs.SyncDir(dir); err != nil {
		held.close()
		return err
	}
	held.release()
	return nil
}

// RemoveAllPaced removes dir and everything below it, like FS.RemoveAll,
// but frees the space of its larger files gradually: each file of at least
// releaseChunk bytes is opened first and, once the removal is durable (the
// parent folder synced), shrunk in paced steps (ReleasePaced). A dropped
// collection's vector file can be gigabytes; freed in one go it would hold
// up every fsync on the device for as long.
func RemoveAllPaced(fs FS, dir string) error {
	var held heldFiles
	var collect func(d string) error
	collect = func(d string) error {
		names, err := fs.List(d)
		if err != nil {
			return err
		}
		for _, n := range names {
			p := filepath.Join(d, n)
			st, err := fs.Stat(p)
			if err != nil {
				return err
			}
			if st.IsDir() {
				if err := collect(p); err != nil {
					return err
				}
				continue
			}
			if st.Size() >= releaseChunk {
				f, err := fs.OpenReadWrite(p)
				if err != nil {
					return err
				}
				held = append(held, f)
			}
		}
		return nil
	}
	if st, err := fs.Stat(dir); err == nil && st.IsDir() {
		if err := collect(dir); err != nil {
			held.close()
			return err
		}
	}
	if err := fs.RemoveAll(dir); err != nil {
		held.close()
		return err
	}
	if err := fs.SyncDir(filepath.Dir(dir)); err != nil {
		held.close()
		return err
	}
	held.release()
	return nil
}
