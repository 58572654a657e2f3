package vfs

import (
	"io"
	"os"
)

// File is an open file of an FS. It is the subset of *os.File the storage
// engine needs, so that an in-memory implementation (MemFS) can stand in
// for the operating system in crash tests.
//
// Size is obtained through Stat (os.FileInfo.Size); File has no separate
// Size method, which keeps *os.File-backed files a thin wrapper.
type File interface {
	io.Reader
	io.ReaderAt
	io.Writer
	io.WriterAt
	io.Closer

	// Sync makes the file's contents durable (fsync). It does NOT make the
	// file's directory entry durable; see FS.SyncDir.
	Sync() error
	// Truncate changes the size of the file. Like a write, the new size
	// is durable only after Sync.
	Truncate(size int64) error
	// Stat describes the file; Size() is its current (not necessarily
	// durable) length.
	Stat() (os.FileInfo, error)
}

// A File is mapped with Map (mmap.go), the one way to reach the bytes of
// an OS file without reading them; the FS gives no other access to the
// operating system's file.

// FS is the file-system seam. Every write, sync, rename and removal of the
// WAL and of the engine's other files goes through it.
//
// Durability model (the one POSIX gives and MemFS enforces):
//   - bytes written to a File are durable once File.Sync returns nil;
//   - a Create, Rename or Remove is durable once SyncDir of the directory
//     (both directories, for a cross-directory Rename) returns nil.
//
// Names are slash- or OS-separated paths; implementations clean them.
type FS interface {
	// Create creates the named file, or truncates it if it exists, and
	// opens it read-write.
	Create(name string) (File, error)
	// OpenReadWrite opens the named file read-write, creating it (empty)
	// if it does not exist. It never truncates.
	OpenReadWrite(name string) (File, error)
	// Open opens the named file read-only.
	Open(name string) (File, error)
	// Rename atomically replaces newname with oldname.
	Rename(oldname, newname string) error
	// Remove removes a file or an empty directory.
	Remove(name string) error
	// RemoveAll removes name and everything below it. A missing name is
	// not an error.
	RemoveAll(name string) error
	// MkdirAll creates dir and any missing parents.
	MkdirAll(dir string, perm os.FileMode) error
	// List returns the names (not paths) of the entries of dir, sorted.
	List(dir string) ([]string, error)
	// Stat describes the named file.
	Stat(name string) (os.FileInfo, error)
	// SyncDir makes the creates, renames and removes done in dir durable.
	SyncDir(dir string) error
	// Lock takes an exclusive lock on the named file, or fails with an
	// error wrapping ErrLocked when another holder has it. Closing the
	// returned Closer releases it. It guards against two processes opening
	// one database, not against threads of one process.
	Lock(name string) (io.Closer, error)
}

// Default is the FS used when Options.FS is nil: the operating system's.
var Default FS = OSFS{}
