package wal

import (
	"bufio"
	"fmt"
	"io"

	"github.com/memrl/memrl/vfs"
)

// segmentReader reads the records of one segment file in order,
// verifying each. It is used by Open (recovery) and by Replay.
type segmentReader struct {
	f    vfs.File
	path string
	size int64 // file size when opened; reading stops there
	hdr  segmentHeader
	r    *bufio.Reader
	off  int64 // offset of the next frame
	next LSN   // LSN the next frame must carry
	hbuf [recordHeaderSize]byte
	buf  []byte // payload buffer, reused between records
}

// badRecord is returned by segmentReader.read for a frame that fails
// verification. Whether it is a torn tail or corruption is for the
// caller to decide (see classifyTail).
type badRecord struct {
	off    int64
	reason string
	// valid is set when the frame's checksum is correct but it is still
	// wrong (an unexpected LSN): that is never a torn write.
	valid bool
}

func (b *badRecord) Error() string { return fmt.Sprintf("bad record at %d: %s", b.off, b.reason) }

// headerState classifies an unreadable segment header.
type headerState int

const (
	headerOK         headerState = iota
	headerIncomplete             // file ends within the header or header is all zero
	headerInvalid                // header present but fails verification
)

// openSegmentReader opens path and reads its header. On a bad header it
// returns the state and a reason, with a nil reader.
func openSegmentReader(fs vfs.FS, path string) (*segmentReader, headerState, string, error) {
	f, err := fs.Open(path)
	if err != nil {
		return nil, 0, "", err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, "", err
	}
	size := st.Size()
	hb := make([]byte, segmentHeaderSize)
	n, err := f.ReadAt(hb, 0)
	if err != nil && err != io.EOF {
		f.Close()
		return nil, 0, "", err
	}
	if n < segmentHeaderSize || allZero(hb) {
		f.Close()
		return nil, headerIncomplete, fmt.Sprintf("incomplete segment header (%d of %d bytes)", n, segmentHeaderSize), nil
	}
	hdr, reason := decodeSegmentHeader(hb)
	if reason != "" {
		f.Close()
		return nil, headerInvalid, reason, nil
	}
	sr := &segmentReader{
		f:    f,
		path: path,
		size: size,
		hdr:  hdr,
		off:  segmentHeaderSize,
		next: hdr.base,
	}
	sr.r = bufio.NewReaderSize(io.NewSectionReader(f, segmentHeaderSize, size-segmentHeaderSize), 256<<10)
	return sr, headerOK, "", nil
}

// read returns the next record. The returned slice is valid until the
// next call. At a clean end of the file it returns io.EOF; for a frame
// that fails verification, a *badRecord; other errors are I/O errors.
func (r *segmentReader) read() (LSN, []byte, error) {
	if r.off == r.size {
		return 0, nil, io.EOF
	}
	if r.size-r.off < recordHeaderSize {
		return 0, nil, &badRecord{off: r.off, reason: fmt.Sprintf("truncated record header (%d bytes before end of file)", r.size-r.off)}
	}
	if _, err := io.ReadFull(r.r, r.hbuf[:]); err != nil {
		return 0, nil, err
	}
	h := decodeFrameHeader(r.hbuf[:])
	if !h.plausible() {
		return 0, nil, &badRecord{off: r.off, reason: fmt.Sprintf("implausible record header (length %d, flags %#x, lsn %d)", h.n, h.flags, h.lsn)}
	}
	fsz := int64(frameSize(h.n))
	if r.off+fsz > r.size {
		return 0, nil, &badRecord{off: r.off, reason: fmt.Sprintf("record of %d bytes extends past end of file", h.n)}
	}
	if cap(r.buf) < int(fsz)-recordHeaderSize {
		r.buf = make([]byte, int(fsz)-recordHeaderSize)
	}
	body := r.buf[:int(fsz)-recordHeaderSize]
	if _, err := io.ReadFull(r.r, body); err != nil {
		return 0, nil, err
	}
	payload := body[:h.n]
	if !h.verify(r.hbuf[:], payload) {
		return 0, nil, &badRecord{off: r.off, reason: "record checksum mismatch"}
	}
	// Padding is not covered by the checksum; it must be zero so that
	// every byte of a segment is verified.
	if !allZero(body[h.n:]) {
		return 0, nil, &badRecord{off: r.off, reason: "non-zero frame padding"}
	}
	if h.lsn != r.next {
		return 0, nil, &badRecord{off: r.off, valid: true, reason: fmt.Sprintf("record has LSN %d, want %d", h.lsn, r.next)}
	}
	r.off += fsz
	r.next++
	return h.lsn, payload, nil
}

func (r *segmentReader) close() error { return r.f.Close() }

// classifyTail decides whether the bytes of the last segment from off
// (where a bad frame starts) to the end are a torn tail, i.e. the
// remains of writes that never completed, or corruption. It is a torn
// tail unless some aligned offset after off holds a frame that verifies
// and carries a plausible LSN (>= next): a valid record after a bad one
// means the damage is in the middle of the log. It returns a description
// of the valid frame found, or "" for a torn tail.
//
// Frames are 8-byte aligned, so only aligned offsets need checking. The
// LSN window bounds the work on garbage: hashing is attempted only for
// headers whose length and LSN are plausible.
func classifyTail(f vfs.File, off, size int64, next LSN) (string, error) {
	tail := make([]byte, size-off)
	if _, err := f.ReadAt(tail, off); err != nil && err != io.EOF {
		return "", err
	}
	maxLSN := next + LSN(len(tail)/recordHeaderSize)
	for q := frameAlign; q+recordHeaderSize <= len(tail); q += frameAlign {
		hb := tail[q : q+recordHeaderSize]
		h := decodeFrameHeader(hb)
		if !h.plausible() || h.lsn < next || h.lsn > maxLSN {
			continue
		}
		end := q + frameSize(h.n)
		if end > len(tail) {
			continue
		}
		if h.verify(hb, tail[q+recordHeaderSize:q+recordHeaderSize+h.n]) {
			return fmt.Sprintf("valid record with LSN %d follows at offset %d", h.lsn, off+int64(q)), nil
		}
	}
	return "", nil
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}
