package madd

import (
	"context"
	"encoding/binary"
	"math"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/memrl/memrl/engine"
	"github.com/memrl/memrl/server"
	"github.com/memrl/memrl/wal"
)

// TestLoadVectors: a .bvecs file's rows come back as FP32 blobs of their
// components; a file with fewer rows than asked for is refused.
func TestLoadVectors(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.bvecs")
	var raw []byte
	for i := 0; i < 3; i++ {
		raw = binary.LittleEndian.AppendUint32(raw, 2)
		raw = append(raw, byte(i), byte(200+i))
	}
	if err := os.WriteFile(path, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	blobs, d, err := loadVectors(path, 3, 0)
	if err != nil || d != 2 || len(blobs) != 3 {
		t.Fatalf("loadVectors: %d blobs of dim %d, %v", len(blobs), d, err)
	}
	if got := math.Float32frombits(binary.LittleEndian.Uint32(blobs[2][4:])); got != 202 {
		t.Fatalf("row 2 component 1 = %v, want 202", got)
	}
	if _, _, err := loadVectors(path, 4, 0); err == nil {
		t.Fatal("4 rows of a 3-row file: no error")
	}
	if blobs, d, err := loadVectors("", 5, 16); err != nil || d != 16 || len(blobs) != 5 || len(blobs[0]) != 64 {
		t.Fatalf("random: %d blobs of dim %d, %v", len(blobs), d, err)
	}
}

// TestLoadBothModes loads memories over the protocol into an in-process
// server with MEM.MADD and with pipelined MEM.ADD; load checks the count.
func TestLoadBothModes(t *testing.T) {
	db, err := engine.Open(t.TempDir(), engine.Options{Sync: wal.SyncNone, CheckpointInterval: -1, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	srv, err := server.New(server.Config{})
	if err != nil {
		t.Fatal(err)
	}
	srv.RegisterMem(db)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	defer srv.Shutdown(context.Background())
	blobs, d, _ := loadVectors("", 2500, 8)
	for _, mode := range []string{"madd", "add"} {
		r, err := load(ln.Addr().String(), d, "FLAT", blobs, "pp", mode, 300, 2)
		if err != nil {
			t.Fatalf("%s: %v", mode, err)
		}
		if r.rate <= 0 || r.p99 < r.p50 {
			t.Fatalf("%s: %+v", mode, r)
		}
	}
}
