package image

import (
	"bytes"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math/rand"
	"testing"
)

type testFile struct {
	kind uint8
	id   uint64
	data []byte
}

func writeImage(t testing.TB, files []testFile) []byte {
	var b bytes.Buffer
	w := NewWriter(&b)
	for _, f := range files {
		w.Begin(f.kind, f.id)
		// Write in uneven pieces, so frames do not follow the writes.
		for p := f.data; len(p) > 0; {
			k := min(len(p), 1+len(p)/3)
			w.Write(p[:k])
			p = p[k:]
		}
		w.Close()
	}
	if err := w.Finish(); err != nil {
		t.Fatal(err)
	}
	if w.Written() != int64(b.Len()) {
		t.Fatalf("Written %d, buffer %d", w.Written(), b.Len())
	}
	return b.Bytes()
}

// readImage reads a whole image, returning its files or the first error.
func readImage(b []byte) ([]testFile, error) {
	r, err := NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	var out []testFile
	for {
		h, err := r.Next()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		data, err := io.ReadAll(r)
		if err != nil {
			return nil, err
		}
		out = append(out, testFile{kind: h.Kind, id: h.ID, data: data})
	}
}

func sampleFiles() []testFile {
	rng := rand.New(rand.NewSource(1))
	big := make([]byte, MaxFrame+MaxFrame/2) // two data frames
	rng.Read(big)
	return []testFile{
		{kind: 1, id: 0, data: []byte("meta")},
		{kind: 2, id: 7, data: big},
		{kind: 3, id: 1 << 40, data: nil}, // an empty file
		{kind: 4, id: 9, data: []byte{1, 2, 3}},
	}
}

func TestRoundTrip(t *testing.T) {
	files := sampleFiles()
	got, err := readImage(writeImage(t, files))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(files) {
		t.Fatalf("read %d files, wrote %d", len(got), len(files))
	}
	for i := range files {
		if got[i].kind != files[i].kind || got[i].id != files[i].id || !bytes.Equal(got[i].data, files[i].data) {
			t.Fatalf("file %d differs: kind %d id %d len %d", i, got[i].kind, got[i].id, len(got[i].data))
		}
	}
}

// TestSkipUnread: Next reads (and checks) what the caller left unread.
func TestSkipUnread(t *testing.T) {
	b := writeImage(t, sampleFiles())
	r, err := NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for {
		_, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n != 4 {
		t.Fatalf("%d files", n)
	}
}

// TestCorruptEveryByte flips each byte of a small image in turn: every
// flip is refused with ErrCorrupt (or ErrVersion), none reads back as a
// different image.
func TestCorruptEveryByte(t *testing.T) {
	files := []testFile{{kind: 1, id: 2, data: []byte("hello")}, {kind: 3, id: 4, data: bytes.Repeat([]byte{7}, 100)}}
	b := writeImage(t, files)
	for i := range b {
		for _, x := range []byte{0x01, 0x80, 0xFF} {
			c := bytes.Clone(b)
			c[i] ^= x
			_, err := readImage(c)
			if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrVersion) {
				t.Fatalf("byte %d ^ %#x: err = %v, want a refusal", i, x, err)
			}
		}
	}
}

// TestTruncateEveryLength cuts the image at every length, frame
// boundaries included: all refused.
func TestTruncateEveryLength(t *testing.T) {
	b := writeImage(t, []testFile{{kind: 1, id: 2, data: []byte("hello")}, {kind: 3, id: 4, data: []byte("world")}})
	for n := 0; n < len(b); n++ {
		if _, err := readImage(b[:n]); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("cut at %d of %d: err = %v, want ErrCorrupt", n, len(b), err)
		}
	}
}

// TestFramesOutOfPlace: well-formed frames (good checksums) in the wrong
// order are refused: a file dropped, a file's close dropped, a data frame
// outside a file.
func TestFramesOutOfPlace(t *testing.T) {
	frame := func(typ byte, body []byte) []byte {
		var out bytes.Buffer
		NewWriter(&out).frame(typ, body)
		return out.Bytes()[headerSize:]
	}
	var hdr bytes.Buffer
	NewWriter(&hdr)
	cases := map[string][][]byte{
		"data outside a file": {frame(frameData, []byte("x"))},
		"begin inside a file": {frame(frameBegin, make([]byte, 9)), frame(frameBegin, make([]byte, 9))},
		"end inside a file":   {frame(frameBegin, make([]byte, 9)), frame(frameEnd, make([]byte, 20))},
		"unknown type":        {frame('Q', nil)},
		"end miscounting":     {frame(frameEnd, make([]byte, 20))},
	}
	for name, frames := range cases {
		b := bytes.Clone(hdr.Bytes())
		for _, f := range frames {
			b = append(b, f...)
		}
		if _, err := readImage(b); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: err = %v, want ErrCorrupt", name, err)
		}
	}
}

func TestOversizedFrame(t *testing.T) {
	var out bytes.Buffer
	w := NewWriter(&out)
	w.Begin(1, 1)
	b := out.Bytes()
	b = append(b, frameData, 0, 0, 0, 0)
	le.PutUint32(b[len(b)-4:], MaxFrame+1)
	if _, err := readImage(b); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("err = %v", err)
	}
}

func TestWrongVersion(t *testing.T) {
	b := writeImage(t, nil)
	le.PutUint32(b[8:], Version+1)
	le.PutUint32(b[12:], crc32Of(b[:12]))
	if _, err := readImage(b); !errors.Is(err, ErrVersion) {
		t.Fatalf("err = %v, want ErrVersion", err)
	}
}

func crc32Of(b []byte) uint32 { return crc32.Checksum(b, castagnoli) }

// TestWriterErrorSticks: a failing writer's error is returned by every
// later call.
func TestWriterErrorSticks(t *testing.T) {
	w := NewWriter(failWriter{})
	if err := w.Begin(1, 1); err == nil {
		t.Fatal("no error")
	}
	if _, err := w.Write([]byte("x")); err == nil {
		t.Fatal("no error")
	}
	if err := w.Finish(); err == nil {
		t.Fatal("no error")
	}
}

type failWriter struct{}

func (failWriter) Write(p []byte) (int, error) { return 0, fmt.Errorf("disk full") }

// FuzzReadImage: the reader never panics, and whatever it accepts reads
// back the same once written again.
func FuzzReadImage(f *testing.F) {
	f.Add(writeImage(f, []testFile{{kind: 1, id: 2, data: []byte("hello")}}))
	f.Add(writeImage(f, nil))
	f.Fuzz(func(t *testing.T, b []byte) {
		files, err := readImage(b)
		if err != nil {
			return
		}
		var out bytes.Buffer
		w := NewWriter(&out)
		for _, f := range files {
			w.Begin(f.kind, f.id)
			w.Write(f.data)
			w.Close()
		}
		if err := w.Finish(); err != nil {
			t.Fatal(err)
		}
		again, err := readImage(out.Bytes())
		if err != nil || len(again) != len(files) {
			t.Fatalf("re-encoded image: %d files, err %v; want %d", len(again), err, len(files))
		}
		for i := range files {
			if again[i].kind != files[i].kind || again[i].id != files[i].id || !bytes.Equal(again[i].data, files[i].data) {
				t.Fatalf("file %d differs after re-encoding", i)
			}
		}
	})
}
