// Package vfs is memrl's file-system seam: every create, write, fsync,
// rename and removal of a memrl file goes through its FS interface, so that
// the same code runs on the operating system (OSFS) and on MemFS, an
// in-memory file system that models what a power loss keeps. Crash tests
// run the log, the engine and the IVF-PQ index over MemFS, cut the power at
// every k-th file operation and check what a restart finds. (Pebble keeps
// its vfs, and etcd its fileutil, apart from the log for the same reason.)
// vfs imports nothing of the project.
//
// # What an FS promises
//
// The durability model is the one POSIX gives on Linux, and the one MemFS
// enforces:
//
//   - Bytes written to a File (Write, WriteAt, Truncate) are durable once
//     File.Sync returns nil, and not before: a crash may keep any prefix of
//     the unsynced changes, the last one possibly torn.
//   - A name change (Create of a new file, OpenReadWrite that creates,
//     Rename, Remove) is visible at once to List, Stat and Open, but
//     durable only once SyncDir of its directory returns nil. A Rename
//     across directories needs both directories synced. File.Sync never
//     makes a name durable.
//   - Rename replaces newname atomically: a crash leaves newname naming
//     the old file or the new one, never neither and never a mix.
//   - Open handles keep working after the name they were opened under is
//     removed or renamed over; the file's space is freed when the last
//     handle closes.
//   - A failed Sync or SyncDir is not retried by callers: what it was to
//     make durable may be lost, and the caller reports the failure (the log
//     fails for good; see package wal).
//
// Callers that replace a file use AtomicFile (CreateAtomic, WriteFileAtomic):
// it writes path+".tmp", syncs it, renames it over path and syncs the
// directory, so after a crash path holds the old contents or the new ones.
// A leftover ".tmp" is garbage and is overwritten by the next replace.
//
// # Mapping files
//
// Map maps a file read-only. For an OS file it is a shared mmap of the
// file, which shows later writes to the file at once (Linux's page cache
// is coherent). A MemFS file has no descriptor: Map gives a private copy of
// its bytes at the time of the call, which is exactly right for files that
// are not written while mapped (the IVF-PQ index) and wrong for files that
// are (a collection's vector file): callers of those check MapShared and
// keep their own copy when it is false.
//
// MapResident gives the same read-only view as a copy in memory from
// AllocResident: anonymous memory outside the Go heap, aligned on and
// advised for 2 MB transparent huge pages (resident_linux.go). A shared
// file mapping gets huge pages only for page-cache pages the kernel cached
// as large folios, which pages written with write(2) are not; data a search
// reads at random (vector rows, an index's lists) is then a page walk per
// read, so the engine keeps its vectors and indexes resident by default.
//
// # Locking
//
// FS.Lock takes an exclusive lock on a file (flock on the OS), so that two
// processes never open one database. MemFS keeps its locks in memory: a
// second Lock of a held name fails until the first is released.
//
// # Pacing
//
// A file system commits fsyncs one journal transaction at a time, so one
// fsync that writes tens of megabytes, or an unlink that frees them, holds
// up every other fsync on the device, the log's among them. SyncPaced
// writes a large file back a megabyte at a time (WriteBacker:
// sync_file_range on Linux), resting between pieces, before the one fsync
// that makes it durable; AtomicFile writes back as it writes. ReleasePaced,
// RemoveFilesPaced and RemoveAllPaced hold a file open across the removal
// of its name, make the removal durable, and then shrink the file a
// megabyte per synced step. Pacing never changes what is durable.
//
// # What MemFS models
//
// MemFS keeps the durable and the not-yet-durable state of every file and
// directory apart:
//
//   - File contents: the synced bytes, plus an ordered log of the unsynced
//     writes and truncations since the last successful Sync.
//   - Names: per directory, the durable names as of the last SyncDir, plus
//     an ordered log of the creates, renames and removes since. A
//     same-directory Rename is one entry (a crash sees the old name or the
//     new one); a cross-directory one is two, one per directory.
//   - Directories themselves (MkdirAll, RemoveAll of a directory, Remove
//     of an empty one) are durable at once. This is a documented
//     simplification, not a model of POSIX: callers that create a
//     directory still sync its parent, as they must on a real disk.
//
// Crash(mode, rng) returns the file system a machine finds after a power
// loss at that instant:
//
//   - DropUnsynced keeps only durable state: synced bytes and names made
//     durable by SyncDir. Every unsynced write, truncation, create, rename
//     and remove is dropped.
//   - KeepRandomPrefix keeps, per file, a random prefix of its unsynced
//     writes (the last kept one possibly cut short) and, per directory, a
//     random prefix of its unsynced name changes, each in the order made.
//   - TearLastSector is KeepRandomPrefix, then tears the last 512-byte
//     sector the last kept write touched (half reverted, or garbage).
//     Synced bytes are never torn.
//
// Faults: FailNextSync, FailNextWrite and FailNextSyncDir fail the next
// matching operation once with ErrInjected, changing nothing (a failed Sync
// leaves its data unsynced). PowerOffAt(k) makes the k-th mutating
// operation and every later one fail with ErrPoweredOff: a crash test runs
// a workload once to count its mutating operations (MutatingOps), then for
// each k reruns it with the power cut at k and Crashes the result. The
// mutating operations are Create, OpenReadWrite of a missing file, Rename,
// Remove, RemoveAll, MkdirAll, SyncDir, and a File's Write, WriteAt,
// Truncate and Sync; reads, Stat, List, Map and Lock are not counted.
//
// A MemFS is safe for concurrent use.
package vfs
