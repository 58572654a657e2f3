package image

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"testing"
)

func sampleMeta() Meta {
	return Meta{SrcUID: 0x0102030405060708, Dim: 768, NRows: 100_003, PaySize: 1 << 33,
		LegacyPayloadEnd: 4096, NextID: 100_017, Memories: 99_000, SnapFiles: 3, Index: true}
}

// TestMetaLayout: EncodeMeta writes each field at the offset doc.go draws,
// and DecodeMeta reads back what was written, with or without an index.
func TestMetaLayout(t *testing.T) {
	m := sampleMeta()
	want := make([]byte, MetaSize)
	want[0] = 1 // MetaVersion
	binary.LittleEndian.PutUint64(want[1:], m.SrcUID)
	binary.LittleEndian.PutUint32(want[9:], m.Dim)
	binary.LittleEndian.PutUint32(want[13:], m.NRows)
	binary.LittleEndian.PutUint64(want[17:], m.PaySize)
	binary.LittleEndian.PutUint64(want[25:], m.LegacyPayloadEnd)
	binary.LittleEndian.PutUint64(want[33:], m.NextID)
	binary.LittleEndian.PutUint64(want[41:], m.Memories)
	binary.LittleEndian.PutUint32(want[49:], m.SnapFiles)
	want[53] = 1
	if MetaSize != 54 || MetaVersion != 1 {
		t.Fatalf("MetaSize %d, MetaVersion %d: the layout of version 1 is 54 bytes", MetaSize, MetaVersion)
	}
	got := EncodeMeta(m)
	if !bytes.Equal(got, want) {
		t.Fatalf("EncodeMeta:\n got %x\nwant %x", got, want)
	}
	for _, ix := range []bool{true, false} {
		m.Index = ix
		d, err := DecodeMeta(EncodeMeta(m))
		if err != nil || d != m {
			t.Fatalf("index %v: decoded %+v, %v; want %+v", ix, d, err, m)
		}
	}
	if b := EncodeMeta(Meta{}); b[53] != 0 || len(b) != MetaSize {
		t.Fatalf("no index: %x", b)
	}
}

// TestMetaDamageRefused: a meta file cut to every shorter length, one
// with a byte after it, one of every other version and one with every
// index flag but 0 and 1 are refused. A byte flipped anywhere else decodes
// (the meta file has no checksum of its own), but never to the meta
// written: TestMetaInImageDamageRefused shows the framing refuses it.
func TestMetaDamageRefused(t *testing.T) {
	good := EncodeMeta(sampleMeta())
	for n := range MetaSize {
		if _, err := DecodeMeta(good[:n]); err == nil {
			t.Fatalf("cut to %d bytes: accepted", n)
		}
	}
	if _, err := DecodeMeta(append(bytes.Clone(good), 0)); err == nil {
		t.Fatal("a byte appended: accepted")
	}
	for v := range 256 {
		if v == MetaVersion {
			continue
		}
		b := bytes.Clone(good)
		b[0] = byte(v)
		if _, err := DecodeMeta(b); err == nil {
			t.Fatalf("version %d: accepted", v)
		}
	}
	for f := 2; f < 256; f++ {
		b := bytes.Clone(good)
		b[53] = byte(f)
		if _, err := DecodeMeta(b); err == nil {
			t.Fatalf("index flag %d: accepted", f)
		}
	}
	for i := 1; i < 53; i++ {
		b := bytes.Clone(good)
		b[i] ^= 0x10
		if m, err := DecodeMeta(b); err == nil && m == sampleMeta() {
			t.Fatalf("byte %d flipped: decoded to the meta written", i)
		}
	}
}

// readMeta reads an image as the importer reads its meta file (the first
// file, at most MetaSize+1 bytes, decoded once its close frame matched),
// then the rest of the image to its end frame.
func readMeta(b []byte) (Meta, error) {
	r, err := NewReader(bytes.NewReader(b))
	if err != nil {
		return Meta{}, err
	}
	h, err := r.Next()
	if err != nil {
		return Meta{}, err
	}
	if h.Kind != KindMeta {
		return Meta{}, fmt.Errorf("first file of kind %d, not the meta file", h.Kind)
	}
	mb, err := io.ReadAll(io.LimitReader(r, MetaSize+1))
	if err != nil {
		return Meta{}, err
	}
	m, err := DecodeMeta(mb)
	if err != nil {
		return m, err
	}
	for {
		if _, err := r.Next(); err == io.EOF {
			return m, nil
		} else if err != nil {
			return m, err
		}
	}
}

// TestMetaInImageDamageRefused: an image holding a meta file and a state
// file, with any one byte flipped or cut short at any length, is refused
// when read as the importer reads it; the meta file framed with a byte
// after it is refused too. The intact image reads back the meta written.
func TestMetaInImageDamageRefused(t *testing.T) {
	m := sampleMeta()
	frame := func(meta []byte) []byte {
		return writeImage(t, []testFile{
			{kind: KindMeta, data: meta},
			{kind: KindState, data: []byte("a state file")},
		})
	}
	good := frame(EncodeMeta(m))
	if got, err := readMeta(good); err != nil || got != m {
		t.Fatalf("intact image: %+v, %v; want %+v", got, err, m)
	}
	for i := range good {
		for _, x := range []byte{0x01, 0x80, 0xff} {
			b := bytes.Clone(good)
			b[i] ^= x
			if _, err := readMeta(b); err == nil {
				t.Fatalf("byte %d flipped (^%#x): accepted", i, x)
			}
		}
	}
	for n := range len(good) {
		if _, err := readMeta(good[:n]); err == nil {
			t.Fatalf("cut to %d bytes: accepted", n)
		}
	}
	if _, err := readMeta(frame(append(EncodeMeta(m), 0))); err == nil {
		t.Fatal("meta file with a byte appended: accepted")
	}
	if _, err := readMeta(frame(EncodeMeta(m)[:MetaSize-1])); err == nil {
		t.Fatal("meta file one byte short: accepted")
	}
}
