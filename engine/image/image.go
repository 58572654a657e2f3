package image

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"

	"github.com/cespare/xxhash/v2"
)

// Magic opens every image; Version is the framing version this package
// writes and reads.
const (
	Magic   = "MEMRLIMG"
	Version = 1
)

// MaxFrame bounds a data frame's body: a reader never holds more than one
// frame, so this bounds its memory.
const MaxFrame = 1 << 20

// Frame types.
const (
	frameBegin = 'B'
	frameData  = 'D'
	frameClose = 'C'
	frameEnd   = 'Z'
)

const headerSize = 16 // magic, version, crc

var (
	// ErrCorrupt wraps every failure to read an image: a checksum that
	// does not match, a frame out of place, a stream cut short.
	ErrCorrupt = errors.New("image: damaged or truncated collection image")
	// ErrVersion: the image was written by another version of the format.
	ErrVersion = errors.New("image: unsupported collection image version")
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

var le = binary.LittleEndian

// Writer writes an image onto an io.Writer: call Begin, Write any number
// of times, Close for each file, then Finish. The first error is kept and
// returned by every later call. Not safe for concurrent use.
type Writer struct {
	w     io.Writer
	n     int64 // bytes written
	h     *xxhash.Digest
	file  *xxhash.Digest // the open file's hash, nil between files
	size  uint64         // the open file's bytes so far
	files uint32
	buf   []byte // the data frame being filled
	err   error
}

// NewWriter writes the image header onto w and returns the Writer.
func NewWriter(w io.Writer) *Writer {
	iw := &Writer{w: w, h: xxhash.New(), buf: make([]byte, 0, MaxFrame)}
	hdr := make([]byte, 0, headerSize)
	hdr = append(hdr, Magic...)
	hdr = le.AppendUint32(hdr, Version)
	hdr = le.AppendUint32(hdr, crc32.Checksum(hdr, castagnoli))
	iw.out(hdr)
	return iw
}

func (w *Writer) out(b []byte) {
	if w.err != nil {
		return
	}
	n, err := w.w.Write(b)
	w.n += int64(n)
	w.h.Write(b[:n])
	if err == nil && n < len(b) {
		err = io.ErrShortWrite
	}
	w.err = err
}

func (w *Writer) frame(typ byte, body []byte) {
	var hdr [5]byte
	hdr[0] = typ
	le.PutUint32(hdr[1:], uint32(len(body)))
	crc := crc32.Update(crc32.Checksum(hdr[:], castagnoli), castagnoli, body)
	w.out(hdr[:])
	w.out(body)
	var tail [4]byte
	le.PutUint32(tail[:], crc)
	w.out(tail[:])
}

// Begin starts a file of kind and id. REQUIRES: no file open.
func (w *Writer) Begin(kind uint8, id uint64) error {
	if w.err == nil && w.file != nil {
		w.err = errors.New("image: Begin with a file open")
	}
	body := le.AppendUint64([]byte{kind}, id)
	w.frame(frameBegin, body)
	w.file, w.size = xxhash.New(), 0
	return w.err
}

// Write appends p to the open file.
func (w *Writer) Write(p []byte) (int, error) {
	if w.err == nil && w.file == nil {
		w.err = errors.New("image: Write with no file open")
	}
	if w.err != nil {
		return 0, w.err
	}
	n := len(p)
	w.file.Write(p)
	w.size += uint64(n)
	for len(p) > 0 {
		k := min(len(p), MaxFrame-len(w.buf))
		w.buf = append(w.buf, p[:k]...)
		p = p[k:]
		if len(w.buf) == MaxFrame {
			w.flush()
		}
	}
	return n, w.err
}

func (w *Writer) flush() {
	if len(w.buf) > 0 {
		w.frame(frameData, w.buf)
		w.buf = w.buf[:0]
	}
}

// Close ends the open file.
func (w *Writer) Close() error {
	if w.err == nil && w.file == nil {
		w.err = errors.New("image: Close with no file open")
	}
	if w.err != nil {
		return w.err
	}
	w.flush()
	body := le.AppendUint64(nil, w.size)
	body = le.AppendUint64(body, w.file.Sum64())
	w.frame(frameClose, body)
	w.file = nil
	w.files++
	return w.err
}

// Finish writes the end frame. REQUIRES: no file open.
func (w *Writer) Finish() error {
	if w.err == nil && w.file != nil {
		w.err = errors.New("image: Finish with a file open")
	}
	body := le.AppendUint32(nil, w.files)
	body = le.AppendUint64(body, uint64(w.n))
	body = le.AppendUint64(body, w.h.Sum64())
	w.frame(frameEnd, body)
	return w.err
}

// Written returns the bytes written so far.
func (w *Writer) Written() int64 { return w.n }

// FileHeader names a file of an image.
type FileHeader struct {
	Kind uint8
	ID   uint64
}

// Reader reads an image, verifying every frame as it goes. Next moves to
// the next file; Read reads the current file's bytes and returns io.EOF
// only once its close frame has matched them. Next returns io.EOF only
// once the end frame has matched the whole image. Every other failure
// wraps ErrCorrupt (or ErrVersion, or the underlying reader's error
// when it is not an EOF). Not safe for concurrent use.
type Reader struct {
	r     io.Reader
	n     uint64 // image bytes consumed
	h     *xxhash.Digest
	files uint32
	err   error // sticky

	inFile bool
	file   *xxhash.Digest
	size   uint64
	data   []byte // unread bytes of the current data frame
	buf    []byte
	done   bool // the end frame was read and matched
}

// NewReader reads and checks the image header.
func NewReader(r io.Reader) (*Reader, error) {
	ir := &Reader{r: r, h: xxhash.New(), buf: make([]byte, 0, MaxFrame)}
	var hdr [headerSize]byte
	if err := ir.full(hdr[:]); err != nil {
		return nil, err
	}
	ir.h.Write(hdr[:])
	if string(hdr[:8]) != Magic {
		return nil, fmt.Errorf("%w: not a collection image (bad magic)", ErrCorrupt)
	}
	if crc32.Checksum(hdr[:12], castagnoli) != le.Uint32(hdr[12:]) {
		return nil, fmt.Errorf("%w: header fails its checksum", ErrCorrupt)
	}
	if v := le.Uint32(hdr[8:12]); v != Version {
		return nil, fmt.Errorf("%w: version %d, this build reads %d", ErrVersion, v, Version)
	}
	return ir, nil
}

// full reads exactly len(b) bytes; a short stream is ErrCorrupt.
func (r *Reader) full(b []byte) error {
	if _, err := io.ReadFull(r.r, b); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return fmt.Errorf("%w: truncated at byte %d", ErrCorrupt, r.n)
		}
		return err
	}
	r.n += uint64(len(b))
	return nil
}

// frame reads one frame; the body is valid until the next call.
func (r *Reader) frame() (byte, []byte, error) {
	start := r.n
	sum := r.h.Sum64() // of the bytes before this frame: the end frame's
	var hdr [5]byte
	if err := r.full(hdr[:]); err != nil {
		return 0, nil, err
	}
	typ, n := hdr[0], le.Uint32(hdr[1:])
	if n > MaxFrame {
		return 0, nil, fmt.Errorf("%w: frame at byte %d claims %d bytes (at most %d)", ErrCorrupt, start, n, MaxFrame)
	}
	body := r.buf[:n]
	if err := r.full(body); err != nil {
		return 0, nil, err
	}
	var tail [4]byte
	if err := r.full(tail[:]); err != nil {
		return 0, nil, err
	}
	crc := crc32.Update(crc32.Checksum(hdr[:], castagnoli), castagnoli, body)
	if crc != le.Uint32(tail[:]) {
		return 0, nil, fmt.Errorf("%w: frame at byte %d fails its checksum", ErrCorrupt, start)
	}
	if typ == frameEnd {
		if n != 20 {
			return 0, nil, fmt.Errorf("%w: end frame of %d bytes", ErrCorrupt, n)
		}
		if le.Uint32(body) != r.files || le.Uint64(body[4:]) != start || le.Uint64(body[12:]) != sum {
			return 0, nil, fmt.Errorf("%w: end frame does not match the image (%d files, %d bytes read)", ErrCorrupt, r.files, start)
		}
		return typ, body, nil
	}
	r.h.Write(hdr[:])
	r.h.Write(body)
	r.h.Write(tail[:])
	return typ, body, nil
}

func (r *Reader) fail(err error) error {
	if r.err == nil {
		r.err = err
	}
	return r.err
}

// Next moves to the next file and returns its header, or io.EOF once the
// image's end frame has been read and matched. Bytes of the current file
// not yet read are read and checked first.
func (r *Reader) Next() (FileHeader, error) {
	if r.err != nil {
		return FileHeader{}, r.err
	}
	if r.done {
		return FileHeader{}, io.EOF
	}
	if r.inFile {
		if _, err := io.Copy(io.Discard, readerOnly{r}); err != nil {
			return FileHeader{}, r.fail(err)
		}
	}
	typ, body, err := r.frame()
	if err != nil {
		return FileHeader{}, r.fail(err)
	}
	switch typ {
	case frameEnd:
		r.done = true
		return FileHeader{}, io.EOF
	case frameBegin:
		if len(body) != 9 {
			return FileHeader{}, r.fail(fmt.Errorf("%w: begin frame of %d bytes", ErrCorrupt, len(body)))
		}
		r.inFile, r.file, r.size, r.data = true, xxhash.New(), 0, nil
		return FileHeader{Kind: body[0], ID: le.Uint64(body[1:])}, nil
	}
	return FileHeader{}, r.fail(fmt.Errorf("%w: frame type %q where a file or the end should begin", ErrCorrupt, typ))
}

type readerOnly struct{ r *Reader }

func (x readerOnly) Read(p []byte) (int, error) { return x.r.Read(p) }

// Read reads the current file's bytes. It returns io.EOF once the file's
// close frame has matched every byte of it.
func (r *Reader) Read(p []byte) (int, error) {
	if r.err != nil {
		return 0, r.err
	}
	if !r.inFile {
		return 0, io.EOF
	}
	for len(r.data) == 0 {
		typ, body, err := r.frame()
		if err != nil {
			return 0, r.fail(err)
		}
		switch typ {
		case frameData:
			if len(body) == 0 {
				return 0, r.fail(fmt.Errorf("%w: empty data frame", ErrCorrupt))
			}
			r.data = body
			r.file.Write(body)
			r.size += uint64(len(body))
		case frameClose:
			if len(body) != 16 {
				return 0, r.fail(fmt.Errorf("%w: close frame of %d bytes", ErrCorrupt, len(body)))
			}
			if le.Uint64(body) != r.size || le.Uint64(body[8:]) != r.file.Sum64() {
				return 0, r.fail(fmt.Errorf("%w: file %d: %d bytes read do not match its close frame", ErrCorrupt, r.files, r.size))
			}
			r.inFile = false
			r.files++
			return 0, io.EOF
		default:
			return 0, r.fail(fmt.Errorf("%w: frame type %q inside a file", ErrCorrupt, typ))
		}
	}
	n := copy(p, r.data)
	r.data = r.data[n:]
	return n, nil
}
