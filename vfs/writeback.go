package vfs

import "time"

// WriteBacker is implemented by files that can write a byte range of their
// dirty pages to the device without syncing metadata or flushing the
// device's cache (Linux sync_file_range). It is a pacing tool, never a
// durability guarantee: only File.Sync makes data durable. OS files on
// Linux implement it; MemFS files do not, since starting a write-back
// changes nothing a crash could keep.
type WriteBacker interface {
	// WriteBack writes the dirty pages of bytes [off, off+n) to the device
	// and waits for them.
	WriteBack(off, n int64) error
}

// writeBackChunk is how many bytes SyncPaced writes back at a time.
const writeBackChunk = 1 << 20

// SyncPaced makes f durable like f.Sync, but first writes the bytes
// [from, to), the ones written since the file was last synced, back to the
// device writeBackChunk at a time, resting after each piece for as long as
// it took. The final Sync then has little data left to write.
//
// Why: a file system commits fsyncs one journal transaction at a time, and
// an fsync that must first write tens of megabytes holds up every other
// fsync on the device, the WAL's among them, which every writer waits for.
// Written back in paced pieces, the same bytes leave the disk idle at least
// half the time and each of the WAL's fsyncs waits for at most one piece.
// (RocksDB's bytes_per_sync and Pebble's BytesPerSync do the same.)
//
// Files without WriteBack (MemFS) are simply synced. A failed write-back
// is returned, and f is not synced: the caller must treat it like a failed
// fsync.
func SyncPaced(f File, from, to int64) error {
	if wb, ok := f.(WriteBacker); ok {
		if err := writeBackPaced(wb, max(from, 0), to); err != nil {
			return err
		}
	}
	return f.Sync()
}

// writeBackPaced writes bytes [from, to) of wb back writeBackChunk at a
// time, resting after each piece for as long as it took. It rests after
// the last piece too: AtomicFile writes back one piece per megabyte
// written, and the rest is what keeps those pieces apart.
func writeBackPaced(wb WriteBacker, from, to int64) error {
	for off := from; off < to; {
		n := min(to-off, writeBackChunk)
		t := time.Now()
		if err := wb.WriteBack(off, n); err != nil {
			return err
		}
		off += n
		time.Sleep(time.Since(t))
	}
	return nil
}
