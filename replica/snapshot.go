package replica

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/cespare/xxhash/v2"
	"github.com/hashicorp/raft"
)

// A replica's raft snapshot is the engine's own state on disk: a full
// checkpoint (engine.DB.CheckpointFull) and the collection files it
// refers to, shipped as files (docs/CLUSTER.md "Replication").
//
// Stream format, version 1 (little endian):
//
//	magic     8 bytes "MEMRLSN1"
//	files     4 bytes: the number of files
//	files × { name length 2 bytes, name (slash-separated, relative),
//	          size 8 bytes, the file's bytes,
//	          sum 8 bytes: xxhash64 of name, size and bytes }
//	trailer   8 bytes "MEMRLEND", then 8 bytes: xxhash64 of every byte
//	          of the stream before the trailer
//
// The file data is streamed (io.Copy), never held whole in memory.
//
// Which files: every regular file under the engine's folder but its LOCK,
// temporary files (".tmp") and its write-ahead log (a full checkpoint
// taken with no command applying covers every record, and the restored
// engine starts a fresh log). The IVF-PQ index files go too, so that a
// replica installing the snapshot serves with the leader's index at once
// instead of building one (minutes at a million memories): an index file
// is replaced only by rename (ivfpq's Save), so the pinned one is whole,
// and it holds at most the rows the collection had when it was pinned,
// which are all in the checkpoint; the engine re-adds the rows after it
// from the vector file at open, as after a crash. Each file is
// opened when the snapshot is taken, under the FSM's goroutine, so no
// command is applying; the snapshot keeps the descriptors and streams
// each file up to its size at that moment. Vector, checksum and payload
// files only grow, checkpoint files are replaced by rename, and a file a
// compaction removes meanwhile stays readable through the open
// descriptor: so what Persist streams is exactly the files as they were,
// while Applies go on.

// snapMagic and snapTrailer frame a snapshot stream.
const (
	snapMagic   = "MEMRLSN1"
	snapTrailer = "MEMRLEND"
	// maxSnapFiles bounds the file count Restore accepts.
	maxSnapFiles = 1 << 20
)

// ErrBadSnapshot reports a snapshot stream Restore refuses: wrong magic or
// version, a file name that is not a clean relative path, a size or
// checksum mismatch, a missing trailer or trailing bytes. The rule it
// enforces: a replica only ever installs a snapshot exactly as its leader
// wrote it; a refused one changes nothing.
var ErrBadSnapshot = errors.New("replica: malformed or damaged snapshot")

// pinnedFile is one file of a snapshot: its name relative to the engine's
// folder, an open descriptor and its size when the snapshot was taken.
type pinnedFile struct {
	name string
	f    *os.File
	size int64
}

// fileSnapshot is the FSMSnapshot of a replica.
type fileSnapshot struct {
	files []pinnedFile
}

// pinFiles opens the files of a snapshot of the engine folder dir.
// REQUIRES: no command is being applied (the FSM goroutine calls it).
func pinFiles(dir string) (*fileSnapshot, error) {
	s := &fileSnapshot{}
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel == "wal" {
				return filepath.SkipDir
			}
			return nil
		}
		if rel == "LOCK" || !d.Type().IsRegular() || strings.HasSuffix(rel, ".tmp") {
			return nil
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		st, err := f.Stat()
		if err != nil {
			f.Close()
			return err
		}
		s.files = append(s.files, pinnedFile{name: rel, f: f, size: st.Size()})
		return nil
	})
	if err != nil {
		s.Release()
		return nil, fmt.Errorf("replica: snapshot of %s: %w", dir, err)
	}
	return s, nil
}

// Persist streams the pinned files to sink in the format above.
func (s *fileSnapshot) Persist(sink raft.SnapshotSink) error {
	if err := writeSnapshot(sink, s.files); err != nil {
		sink.Cancel()
		return err
	}
	return sink.Close()
}

// Release closes the pinned files.
func (s *fileSnapshot) Release() {
	for _, p := range s.files {
		p.f.Close()
	}
	s.files = nil
}

// writeSnapshot writes files to w in the stream format.
func writeSnapshot(w io.Writer, files []pinnedFile) error {
	bw := bufio.NewWriterSize(w, 1<<20)
	all := xxhash.New()
	out := io.MultiWriter(bw, all)
	var hdr [8]byte
	io.WriteString(out, snapMagic)
	binary.LittleEndian.PutUint32(hdr[:4], uint32(len(files)))
	out.Write(hdr[:4])
	for _, p := range files {
		sum := xxhash.New()
		fo := io.MultiWriter(out, sum)
		binary.LittleEndian.PutUint16(hdr[:2], uint16(len(p.name)))
		fo.Write(hdr[:2])
		io.WriteString(fo, p.name)
		binary.LittleEndian.PutUint64(hdr[:], uint64(p.size))
		fo.Write(hdr[:])
		n, err := io.Copy(fo, io.NewSectionReader(p.f, 0, p.size))
		if err != nil {
			return fmt.Errorf("replica: snapshot: read %s: %w", p.name, err)
		}
		if n != p.size {
			return fmt.Errorf("replica: snapshot: %s shrank from %d to %d bytes", p.name, p.size, n)
		}
		binary.LittleEndian.PutUint64(hdr[:], sum.Sum64())
		out.Write(hdr[:])
	}
	io.WriteString(bw, snapTrailer)
	binary.LittleEndian.PutUint64(hdr[:], all.Sum64())
	bw.Write(hdr[:])
	return bw.Flush()
}

// readSnapshot reads a snapshot stream into the empty folder dir,
// verifying every checksum, and fails with ErrBadSnapshot (or a read or
// write error) if anything is amiss; the caller removes dir then.
func readSnapshot(r io.Reader, dir string) error {
	all := xxhash.New()
	br := bufio.NewReaderSize(r, 1<<20)
	in := io.TeeReader(br, all)
	var hdr [8]byte
	if _, err := io.ReadFull(in, hdr[:]); err != nil || string(hdr[:]) != snapMagic {
		return fmt.Errorf("%w: no %s header", ErrBadSnapshot, snapMagic)
	}
	if _, err := io.ReadFull(in, hdr[:4]); err != nil {
		return fmt.Errorf("%w: cut short in its header", ErrBadSnapshot)
	}
	n := binary.LittleEndian.Uint32(hdr[:4])
	if n > maxSnapFiles {
		return fmt.Errorf("%w: %d files", ErrBadSnapshot, n)
	}
	for i := uint32(0); i < n; i++ {
		if err := readSnapFile(in, dir, i); err != nil {
			return err
		}
	}
	want := all.Sum64()
	if _, err := io.ReadFull(br, hdr[:]); err != nil || string(hdr[:]) != snapTrailer {
		return fmt.Errorf("%w: no trailer", ErrBadSnapshot)
	}
	if _, err := io.ReadFull(br, hdr[:]); err != nil || binary.LittleEndian.Uint64(hdr[:]) != want {
		return fmt.Errorf("%w: stream checksum mismatch", ErrBadSnapshot)
	}
	if _, err := br.ReadByte(); err != io.EOF {
		return fmt.Errorf("%w: bytes after the trailer", ErrBadSnapshot)
	}
	return nil
}

// readSnapFile reads the i-th file of a stream into dir.
func readSnapFile(in io.Reader, dir string, i uint32) error {
	sum := xxhash.New()
	fin := io.TeeReader(in, sum)
	var hdr [8]byte
	if _, err := io.ReadFull(fin, hdr[:2]); err != nil {
		return fmt.Errorf("%w: file %d cut short", ErrBadSnapshot, i)
	}
	name := make([]byte, binary.LittleEndian.Uint16(hdr[:2]))
	if _, err := io.ReadFull(fin, name); err != nil {
		return fmt.Errorf("%w: file %d cut short", ErrBadSnapshot, i)
	}
	if !validSnapName(string(name)) {
		return fmt.Errorf("%w: file %d has the bad name %q", ErrBadSnapshot, i, name)
	}
	if _, err := io.ReadFull(fin, hdr[:]); err != nil {
		return fmt.Errorf("%w: %s cut short", ErrBadSnapshot, name)
	}
	size := int64(binary.LittleEndian.Uint64(hdr[:]))
	if size < 0 {
		return fmt.Errorf("%w: %s has size %d", ErrBadSnapshot, name, size)
	}
	path := filepath.Join(dir, filepath.FromSlash(string(name)))
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err // a name given twice fails here too
	}
	defer f.Close()
	if m, err := io.CopyN(f, fin, size); err != nil {
		if errors.Is(err, io.EOF) {
			return fmt.Errorf("%w: %s cut short at %d of %d bytes", ErrBadSnapshot, name, m, size)
		}
		return err
	}
	got := sum.Sum64()
	if _, err := io.ReadFull(in, hdr[:]); err != nil {
		return fmt.Errorf("%w: %s cut short", ErrBadSnapshot, name)
	}
	if binary.LittleEndian.Uint64(hdr[:]) != got {
		return fmt.Errorf("%w: %s checksum mismatch", ErrBadSnapshot, name)
	}
	return f.Close()
}

// validSnapName reports whether name is a clean, relative, slash-separated
// path inside the engine folder.
func validSnapName(name string) bool {
	if name == "" || name == "LOCK" || strings.HasPrefix(name, "/") || strings.Contains(name, "\\") {
		return false
	}
	for _, part := range strings.Split(name, "/") {
		if part == "" || part == "." || part == ".." {
			return false
		}
	}
	return true
}
