package engine

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/memrl/memrl/engine/image"
	"github.com/memrl/memrl/vfs"
)

// Tests of export and import (collection_export.go, collection_import.go).

// importedState is everything of a collection an import must carry, as its
// readers see it.
type importedState struct {
	mems     map[uint64]memState
	hist     map[uint64]string
	snaps    string
	ghosts   string
	prune    string
	indexed  string
	info     string
	retrieve string
}

func readXferState(t *testing.T, c *Collection) importedState {
	t.Helper()
	s := importedState{mems: scanState(t, c), hist: map[uint64]string{}}
	for id := range s.mems {
		h, err := c.History(ByID(id), 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(h) > 0 {
			s.hist[id] = fmt.Sprint(h)
		}
	}
	list, err := c.Snapshots()
	if err != nil {
		t.Fatal(err)
	}
	s.snaps = fmt.Sprint(list)
	c.mu.RLock()
	var ghosts []string
	for id, m := range c.snap.ghosts {
		ghosts = append(ghosts, fmt.Sprintf("%d:%d:%d:%s:%s:%d", id, m.payLen, m.created, m.key(), m.attrs(), m.expires()))
	}
	c.mu.RUnlock()
	slices.Sort(ghosts)
	s.ghosts = strings.Join(ghosts, ",")
	ps, err := c.PruneStatus()
	if err != nil {
		t.Fatal(err)
	}
	s.prune = fmt.Sprintf("%+v %v %v %d", ps.Policy, ps.Since.UnixNano(), ps.LastRun.UnixNano(), ps.LastCount)
	f, err := c.IndexedFields()
	if err != nil {
		t.Fatal(err)
	}
	s.indexed = fmt.Sprint(f)
	info, err := c.Info()
	if err != nil {
		t.Fatal(err)
	}
	info.Name, info.Index, info.PayloadMB = "", "", 0
	s.info = fmt.Sprintf("%+v", info)
	rng := rand.New(rand.NewSource(5))
	var res []string
	for range 5 {
		q := make([]float32, c.cfg.Dim)
		for i := range q {
			q[i] = rng.Float32()
		}
		for _, path := range []SearchPath{PathAuto, PathExact} {
			o := NewRetrieveOptions()
			o.K1, o.K2, o.Lambda, o.Path = 20, 5, 0.5, path
			r, err := c.Retrieve(q, o)
			if err != nil {
				t.Fatal(err)
			}
			for _, x := range r {
				res = append(res, fmt.Sprintf("%d/%.6f", x.ID, x.Score))
			}
		}
	}
	s.retrieve = strings.Join(res, " ")
	return s
}

func (s importedState) diff(o importedState) string {
	if d := diffState(s.mems, o.mems); d != "" {
		return d
	}
	for _, p := range [][3]string{{"history", fmt.Sprint(s.hist), fmt.Sprint(o.hist)}, {"snapshots", s.snaps, o.snaps},
		{"ghosts", s.ghosts, o.ghosts}, {"prune policy", s.prune, o.prune}, {"indexed fields", s.indexed, o.indexed},
		{"info", s.info, o.info}, {"retrievals", s.retrieve, o.retrieve}} {
		if p[1] != p[2] {
			return fmt.Sprintf("%s differ:\n want %s\n  got %s", p[0], p[1], p[2])
		}
	}
	return ""
}

func xferOpts(fs *vfs.MemFS) Options {
	o := crashOpts(fs)
	o.SweepInterval, o.PruneInterval, o.CompactShare = -1, -1, -1
	return o
}

// xferWorkload fills collection c of db with everything an export must
// carry: payloads, attributes, keys, expiries, rewards (history),
// payload and attribute updates, deletes, snapshots holding ghosts, a
// prune policy and its run, an indexed field and a compaction, then more
// writes after the compaction.
func xferWorkload(t *testing.T, db *DB, c *Collection, n int) {
	t.Helper()
	rng := rand.New(rand.NewSource(int64(n)))
	dim := c.cfg.Dim
	vec := func() []float32 {
		v := make([]float32, dim)
		for i := range v {
			v[i] = rng.Float32()*2 - 1
		}
		return v
	}
	addN := func(from, to int) {
		for i := from; i < to; i++ {
			req := AddRequest{Vector: vec(), Payload: []byte(fmt.Sprintf("payload %d", i)),
				Attrs: []byte(fmt.Sprintf(`{"g":%d,"t":"x%d"}`, i%5, i%3))}
			if i%4 == 0 {
				req.Key = fmt.Sprintf("key-%d", i)
			}
			if i%7 == 0 {
				req.TTL = time.Hour * time.Duration(1+i%3)
			}
			if _, err := c.Add(req); err != nil {
				t.Fatal(err)
			}
		}
	}
	reward := func(k int) {
		for range k {
			id := 1 + uint64(rng.Intn(n))
			if _, err := c.Reward(rng.Float64()*2-1, []uint64{id}, nil); err != nil && !errors.Is(err, ErrNoMemory) {
				t.Fatal(err)
			}
		}
	}
	if err := c.IndexField("g", true); err != nil {
		t.Fatal(err)
	}
	addN(0, n/2)
	reward(n)
	for id := uint64(3); id < uint64(n/2); id += 11 {
		if err := c.SetPayload(ByID(id), []byte(fmt.Sprintf("new payload %d", id))); err != nil {
			t.Fatal(err)
		}
		if err := c.SetAttrs(ByID(id+1), []byte(`{"g":9}`)); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Snapshot("s1"); err != nil {
		t.Fatal(err)
	}
	var del []uint64
	for id := uint64(2); id < uint64(n/2); id += 5 {
		del = append(del, id)
	}
	if _, err := c.Delete(del); err != nil { // ghosts of s1
		t.Fatal(err)
	}
	reward(n / 2)
	if _, err := c.Compact(); err != nil {
		t.Fatal(err)
	}
	addN(n/2, n)
	if err := c.Snapshot("s2"); err != nil {
		t.Fatal(err)
	}
	reward(n)
	if _, err := c.Delete([]uint64{uint64(n/2 + 1), uint64(n/2 + 3)}); err != nil {
		t.Fatal(err)
	}
	p := &PrunePolicy{Prune: PruneOptions{QBelow: -0.9, HasQBelow: true, MinVisits: 1, HasMinVisits: true}, Every: time.Hour}
	if err := c.SetPrunePolicy(p); err != nil {
		t.Fatal(err)
	}
	if _, err := db.RunPrunePolicies(); err != nil {
		t.Fatal(err)
	}
}

// exportBytes exports c and returns its image.
func exportBytes(t *testing.T, c *Collection) []byte {
	t.Helper()
	e, err := c.BeginExport()
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	var b bytes.Buffer
	n, err := e.WriteTo(&b)
	if err != nil {
		t.Fatal(err)
	}
	if n != int64(b.Len()) {
		t.Fatalf("WriteTo says %d bytes, wrote %d", n, b.Len())
	}
	return b.Bytes()
}

func openXfer(t *testing.T, fs *vfs.MemFS) *DB {
	t.Helper()
	db, err := Open("/db", xferOpts(fs))
	if err != nil {
		t.Fatal(err)
	}
	return db
}

// sourceDB builds the source collection "c" of n memories.
func sourceDB(t *testing.T, cfg Config, n int) (*DB, *Collection) {
	db := openXfer(t, vfs.NewMemFS())
	t.Cleanup(func() { db.Close() })
	c := mustColl(t, db, "c", cfg)
	xferWorkload(t, db, c, n)
	return db, c
}

func flatXferConfig() Config {
	cfg := NewConfig(8)
	cfg.Index.Kind = IndexFlat
	return cfg
}

// TestExportImportEveryField: a collection exported and imported into
// another database reads back the same in every respect, and writes to
// the source during WriteTo do not leak into the image.
func TestExportImportEveryField(t *testing.T) {
	for _, name := range []string{"flat", "ivfpq"} {
		t.Run(name, func(t *testing.T) {
			cfg, n := flatXferConfig(), 300
			if name == "ivfpq" {
				cfg = Config{Dim: 16, Metric: L2, Index: IndexConfig{NList: 8, TrainThreshold: 1000}}
				n = 1600
			}
			src, c := sourceDB(t, cfg, n)
			if name == "ivfpq" {
				waitIndexed(t, c)
				waitIndexSaved(t, c)
				// Rows the saved index lacks: the importer catches up.
				for i := range 50 {
					v := make([]float32, 16)
					v[i%16] = 1
					if _, err := c.Add(AddRequest{Vector: v, Payload: []byte("late")}); err != nil {
						t.Fatal(err)
					}
				}
			}
			want := readXferState(t, c)

			e, err := c.BeginExport()
			if err != nil {
				t.Fatal(err)
			}
			// Writes during WriteTo, made from inside the stream (the
			// export has read part of the files by then).
			var img bytes.Buffer
			w := &hookWriter{w: &img, after: 64 << 10, hook: func() { mutateSource(t, c) }}
			if _, err := e.WriteTo(w); err != nil {
				t.Fatal(err)
			}
			if !w.fired {
				w.hook()
			}
			// The compaction during WriteTo left the generation the export
			// read to Close, which removes it.
			c.mu.RLock()
			gen := c.gen
			c.mu.RUnlock()
			if !slices.Contains(genFilesIn(t, c), e.gen) || e.gen == gen {
				t.Fatalf("generation %d read by the export: files of generations %v, current %d", e.gen, genFilesIn(t, c), gen)
			}
			e.Close()
			if got := genFilesIn(t, c); !slices.Equal(got, []uint64{gen}) {
				t.Fatalf("after Close, files of generations %v, want only %d", got, gen)
			}
			if d := want.diff(readXferState(t, c)); d == "" {
				t.Fatal("the writes during WriteTo changed nothing: the test tests nothing")
			}
			_ = src

			fs := vfs.NewMemFS()
			dst := openXfer(t, fs)
			defer func() { dst.Close() }()
			mustColl(t, dst, "other", NewConfig(4)) // another collection, untouched
			c2, err := dst.ImportCollection("c", bytes.NewReader(img.Bytes()))
			if err != nil {
				t.Fatal(err)
			}
			if name == "ivfpq" {
				info, _ := c2.Info()
				if !strings.HasPrefix(info.Index, "ivfpq") {
					t.Fatalf("imported index: %q, want the shipped ivfpq index in use", info.Index)
				}
			}
			if d := want.diff(readXferState(t, c2)); d != "" {
				t.Fatalf("imported: %s", d)
			}
			// Rolling back to each snapshot gives the same state on both
			// sides (the snapshot files and ghosts came along).
			srcAgain, err := src.ImportCollection("c-copy", bytes.NewReader(img.Bytes()))
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range []string{"s2", "s1"} {
				if _, err := c2.Rollback(s); err != nil {
					t.Fatal(err)
				}
				if _, err := srcAgain.Rollback(s); err != nil {
					t.Fatal(err)
				}
				if d := readXferState(t, srcAgain).diff(readXferState(t, c2)); d != "" {
					t.Fatalf("after rollback to %s: %s", s, d)
				}
			}
		})
	}
}

// genFilesIn lists the generations of c's folder's files.
func genFilesIn(t *testing.T, c *Collection) []uint64 {
	names, err := c.db.fs.List(c.dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []uint64
	for _, n := range names {
		if g, ok := fileGen(n); ok && !slices.Contains(out, g) {
			out = append(out, g)
		}
	}
	slices.Sort(out)
	return out
}

// mutateSource changes collection c in every way.
func mutateSource(t *testing.T, c *Collection) {
	if _, err := c.Add(AddRequest{Vector: make1(c.cfg.Dim), Payload: []byte("during")}); err != nil {
		t.Error(err)
	}
	if _, err := c.Reward(1, []uint64{1}, nil); err != nil {
		t.Error(err)
	}
	if _, err := c.Delete([]uint64{4, 5, 6}); err != nil {
		t.Error(err)
	}
	if _, err := c.DeleteSnapshot("s1"); err != nil {
		t.Error(err)
	}
	if err := c.Snapshot("s3"); err != nil {
		t.Error(err)
	}
	if _, err := c.Compact(); err != nil {
		t.Error(err)
	}
}

func make1(dim int) []float32 {
	v := make([]float32, dim)
	v[0] = 0.5
	return v
}

type hookWriter struct {
	w     io.Writer
	n     int
	after int
	fired bool
	hook  func()
}

func (h *hookWriter) Write(p []byte) (int, error) {
	n, err := h.w.Write(p)
	h.n += n
	if !h.fired && h.n >= h.after {
		h.fired = true
		h.hook()
	}
	return n, err
}

// TestImportSurvivesCrash: once ImportCollection returns, a crash that
// drops every unsynced write keeps the collection; after the checkpoint
// that absorbs it (a delta here, then a full one at Close) its state file
// is gone and it still reads the same.
func TestImportSurvivesCrash(t *testing.T) {
	_, c := sourceDB(t, flatXferConfig(), 200)
	want := readXferState(t, c)
	img := exportBytes(t, c)

	fs := vfs.NewMemFS()
	db := openXfer(t, fs)
	mustColl(t, db, "other", NewConfig(4))
	if err := db.CheckpointFull(); err != nil { // the import then lands in a delta
		t.Fatal(err)
	}
	c2, err := db.ImportCollection("c", bytes.NewReader(img))
	if err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(c2.dir, importStateName)
	if _, err := fs.Stat(filepath.Join(c2.dir, importMarkerName)); err == nil {
		t.Fatal("import marker left after the import")
	}
	crashed := fs.Crash(vfs.DropUnsynced, rand.New(rand.NewSource(1)))
	db.Close()

	db2 := openXfer(t, crashed)
	c3, err := db2.Collection("c")
	if err != nil {
		t.Fatalf("after a crash: %v", err)
	}
	if d := want.diff(readXferState(t, c3)); d != "" {
		t.Fatalf("after a crash: %s", d)
	}
	// Writes after the import replay over it, and extend its history
	// (whose LSNs were the source log's, far above this log's).
	hist, err := c3.History(ByID(1), 0)
	if err != nil || len(hist) == 0 {
		t.Fatalf("history of memory 1: %v, %v; the workload rewards it", hist, err)
	}
	qs, err := c3.Reward(0.75, []uint64{1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	hist2, err := c3.History(ByID(1), 0)
	if err != nil || len(hist2) != min(len(hist)+1, DefaultHistoryLen) || hist2[0].Reward != 0.75 || hist2[0].Q != qs[0] {
		t.Fatalf("history after a reward: %d entries (before %d), newest %+v; want the reward 0.75, Q %v", len(hist2), len(hist), hist2[0], qs[0])
	}
	after := readXferState(t, c3)
	if err := db2.Checkpoint(); err != nil { // a delta: it must hold every imported memory
		t.Fatal(err)
	}
	if db2.CheckpointStatus().LastFull {
		t.Fatal("the checkpoint was full; the test wants a delta")
	}
	if _, err := crashed.Stat(state); err == nil {
		t.Fatal("state file kept after a checkpoint absorbed the import")
	}
	crashed2 := crashed.Crash(vfs.DropUnsynced, rand.New(rand.NewSource(2)))
	db2.Close()
	db3 := openXfer(t, crashed2)
	defer db3.Close()
	c4, err := db3.Collection("c")
	if err != nil {
		t.Fatal(err)
	}
	if d := after.diff(readXferState(t, c4)); d != "" {
		t.Fatalf("after the checkpoint and a crash: %s", d)
	}
}

// collectionFolders lists the folders under collections/.
func collectionFolders(t *testing.T, fs vfs.FS) []string {
	names, err := fs.List("/db/collections")
	if err != nil {
		t.Fatal(err)
	}
	return names
}

// TestImportCrashMidway: a power-off at every mutating file operation of
// an import leaves, after reopening, either no collection and no folder of
// it, or (once the import's record was durable) the whole collection.
func TestImportCrashMidway(t *testing.T) {
	_, c := sourceDB(t, flatXferConfig(), 60)
	want := readXferState(t, c)
	img := exportBytes(t, c)

	base := func() (*vfs.MemFS, *DB) {
		fs := vfs.NewMemFS()
		db := openXfer(t, fs)
		mustColl(t, db, "other", NewConfig(4))
		return fs, db
	}
	fs, db := base()
	folders := collectionFolders(t, fs)
	start := fs.MutatingOps()
	if _, err := db.ImportCollection("c", bytes.NewReader(img)); err != nil {
		t.Fatal(err)
	}
	total := fs.MutatingOps()
	db.Close()

	whole, none := 0, 0
	step := int64(1)
	if testing.Short() {
		step = max((total-start)/15, 1)
	}
	for k := start + 1; k <= total; k += step {
		for _, mode := range []vfs.CrashMode{vfs.DropUnsynced, vfs.KeepRandomPrefix, vfs.TearLastSector} {
			fs, db := base()
			fs.PowerOffAt(k)
			_, ierr := db.ImportCollection("c", bytes.NewReader(img))
			crashed := fs.Crash(mode, rand.New(rand.NewSource(k)))
			db.Close()
			what := fmt.Sprintf("power off at op %d of %d (%v)", k-start, total-start, mode)
			db2, err := Open("/db", xferOpts(crashed))
			if err != nil {
				t.Fatalf("%s: reopen: %v", what, err)
			}
			c2, err := db2.Collection("c")
			switch {
			case err == nil:
				whole++
				if d := want.diff(readXferState(t, c2)); d != "" {
					t.Fatalf("%s: imported collection differs: %s", what, d)
				}
			case ierr == nil:
				t.Fatalf("%s: the import returned nil, and the collection is gone: %v", what, err)
			default:
				none++
				if got := collectionFolders(t, crashed); !slices.Equal(got, folders) {
					t.Fatalf("%s: folders %v after reopening, want %v", what, got, folders)
				}
			}
			db2.Close()
		}
	}
	if whole == 0 || none == 0 {
		t.Fatalf("%d crash points kept the collection, %d did not: want both", whole, none)
	}
	t.Logf("%d file operations; %d crash points kept the import, %d left nothing", total-start, whole, none)
}

// TestImportRefusesDamage: an image damaged in any of its files, or cut
// short anywhere, is refused, and the database is as it was: no
// collection, no folder.
func TestImportRefusesDamage(t *testing.T) {
	_, c := sourceDB(t, flatXferConfig(), 60)
	img := exportBytes(t, c)
	fs := vfs.NewMemFS()
	db := openXfer(t, fs)
	defer db.Close()
	mustColl(t, db, "other", NewConfig(4))
	folders := collectionFolders(t, fs)
	check := func(what string, b []byte) {
		t.Helper()
		_, err := db.ImportCollection("c", bytes.NewReader(b))
		if err == nil {
			t.Fatalf("%s: imported", what)
		}
		if !errors.Is(err, image.ErrCorrupt) && !errors.Is(err, ErrBadImage) && !errors.Is(err, ErrCorruptCheckpoint) {
			t.Fatalf("%s: err = %v, not a refusal of the image", what, err)
		}
		if got := db.List(); !slices.Equal(got, []string{"other"}) {
			t.Fatalf("%s: collections %v", what, got)
		}
		if got := collectionFolders(t, fs); !slices.Equal(got, folders) {
			t.Fatalf("%s: folders %v, want %v", what, got, folders)
		}
	}
	// Every file of the image: flip a byte at its start, middle and end.
	spans := fileSpans(t, img)
	if len(spans) < 5 {
		t.Fatalf("%d files", len(spans))
	}
	for _, s := range spans {
		for _, off := range []int{s.from, (s.from + s.to) / 2, s.to - 1} {
			b := bytes.Clone(img)
			b[off] ^= 0x40
			check(fmt.Sprintf("file kind %d: byte %d flipped", s.kind, off), b)
		}
	}
	// A stride of single-byte flips, and cuts, over the whole image.
	// (engine/image's own test flips every byte of an image and cuts it
	// at every length; here the point is that nothing is left behind.)
	points := 150
	if testing.Short() {
		points = 50
	}
	stride := max(len(img)/points, 1)
	for off := 0; off < len(img); off += stride {
		b := bytes.Clone(img)
		b[off] ^= 0x01
		check(fmt.Sprintf("byte %d flipped", off), b)
		check(fmt.Sprintf("cut at %d", off), img[:off])
	}
	check("cut before the end frame", img[:len(img)-1])

	// Framing intact, content not: files re-framed with a change.
	extra := uint8(0)
	reframe := func(edit func(kind uint8, data []byte) []byte) []byte {
		r, err := image.NewReader(bytes.NewReader(img))
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		w := image.NewWriter(&out)
		for {
			h, err := r.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			data, err := io.ReadAll(r)
			if err != nil {
				t.Fatal(err)
			}
			if data = edit(h.Kind, data); data == nil {
				continue
			}
			w.Begin(h.Kind, h.ID)
			w.Write(data)
			w.Close()
		}
		if extra != 0 {
			w.Begin(extra, 0)
			w.Write([]byte("?"))
			w.Close()
		}
		if err := w.Finish(); err != nil {
			t.Fatal(err)
		}
		return out.Bytes()
	}
	check("payloads dropped", reframe(func(k uint8, d []byte) []byte {
		if k == xferPayloads {
			return nil
		}
		return d
	}))
	check("vectors one row short", reframe(func(k uint8, d []byte) []byte {
		if k == xferVectors {
			return d[:len(d)-32]
		}
		return d
	}))
	check("state checksum", reframe(func(k uint8, d []byte) []byte {
		if k == xferState {
			d = bytes.Clone(d)
			d[len(d)/2] ^= 1
		}
		return d
	}))
	check("meta nextID", reframe(func(k uint8, d []byte) []byte {
		if k == xferMeta {
			d = bytes.Clone(d)
			d[1+8+4+4+8+8] ^= 1
		}
		return d
	}))
	same := func(k uint8, d []byte) []byte { return d }
	extra = 9
	check("unknown file kind", reframe(same))
	extra = xferMeta
	check("a second meta file", reframe(same))
	extra = 0
	// And the intact image still imports.
	if _, err := db.ImportCollection("c", bytes.NewReader(img)); err != nil {
		t.Fatal(err)
	}
}

type fileSpan struct {
	kind     uint8
	from, to int // data bytes of the file in the image (frames' bodies and all)
}

// fileSpans locates each file of an image, from its begin frame to the
// end of its close frame.
func fileSpans(t *testing.T, img []byte) []fileSpan {
	var out []fileSpan
	off := 16
	var cur *fileSpan
	for off < len(img) {
		typ, n := img[off], int(le.Uint32(img[off+1:]))
		end := off + 5 + n + 4
		switch typ {
		case 'B':
			out = append(out, fileSpan{kind: img[off+5], from: off})
			cur = &out[len(out)-1]
		case 'C':
			cur.to = end
		}
		off = end
	}
	return out
}

// TestImportExisting: an existing name is ErrCollectionExists, and
// nothing is read or written.
func TestImportExisting(t *testing.T) {
	_, c := sourceDB(t, flatXferConfig(), 20)
	img := exportBytes(t, c)
	fs := vfs.NewMemFS()
	db := openXfer(t, fs)
	defer db.Close()
	mustColl(t, db, "c", NewConfig(4))
	folders := collectionFolders(t, fs)
	if _, err := db.ImportCollection("c", bytes.NewReader(img)); !errors.Is(err, ErrCollectionExists) {
		t.Fatalf("err = %v, want ErrCollectionExists", err)
	}
	if got := collectionFolders(t, fs); !slices.Equal(got, folders) {
		t.Fatalf("folders %v, want %v", got, folders)
	}
	if _, err := db.ImportCollection("bad name!", bytes.NewReader(img)); err == nil {
		t.Fatal("a bad name was accepted")
	}
}

// TestImportDeterministic: two databases importing the same bytes end in
// the same state, whatever their clocks; further writes then give the
// same ids.
func TestImportDeterministic(t *testing.T) {
	_, c := sourceDB(t, flatXferConfig(), 80)
	img := exportBytes(t, c)
	var states []importedState
	var ids []uint64
	for i := range 2 {
		o := xferOpts(vfs.NewMemFS())
		o.Now = func() time.Time { return crashNow().Add(time.Duration(i) * time.Minute) }
		db, err := Open("/db", o)
		if err != nil {
			t.Fatal(err)
		}
		for range i { // a different uid
			mustColl(t, db, fmt.Sprint("x", i), NewConfig(4))
		}
		c2, err := db.ImportCollection("c", bytes.NewReader(img))
		if err != nil {
			t.Fatal(err)
		}
		states = append(states, readXferState(t, c2))
		id, err := c2.Add(AddRequest{Vector: make1(8)})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
		db.Close()
	}
	if d := states[0].diff(states[1]); d != "" {
		t.Fatal(d)
	}
	if ids[0] != ids[1] {
		t.Fatalf("next ids %d and %d", ids[0], ids[1])
	}
}

// TestImportDropCrash: an import dropped before any checkpoint replays as
// the import then the drop: no collection, and its folder goes with the
// next checkpoint.
func TestImportDropCrash(t *testing.T) {
	_, c := sourceDB(t, flatXferConfig(), 30)
	img := exportBytes(t, c)
	fs := vfs.NewMemFS()
	db := openXfer(t, fs)
	mustColl(t, db, "other", NewConfig(4))
	folders := collectionFolders(t, fs)
	if _, err := db.ImportCollection("c", bytes.NewReader(img)); err != nil {
		t.Fatal(err)
	}
	if err := db.Drop("c"); err != nil {
		t.Fatal(err)
	}
	crashed := fs.Crash(vfs.DropUnsynced, rand.New(rand.NewSource(1)))
	db.Close()
	db2 := openXfer(t, crashed)
	defer db2.Close()
	if got := db2.List(); !slices.Equal(got, []string{"other"}) {
		t.Fatalf("collections %v after the crash", got)
	}
	if err := db2.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	if got := collectionFolders(t, crashed); !slices.Equal(got, folders) {
		t.Fatalf("folders %v after a checkpoint, want %v", got, folders)
	}
}

// TestPrepareImport: the two-step import. A checkpoint between the steps
// leaves the prepared folder alone; Commit under a taken name fails and
// leaves nothing; Abort leaves nothing; a prepared import commits once.
func TestPrepareImport(t *testing.T) {
	_, c := sourceDB(t, flatXferConfig(), 40)
	want := readXferState(t, c)
	img := exportBytes(t, c)
	fs := vfs.NewMemFS()
	db := openXfer(t, fs)
	defer db.Close()
	mustColl(t, db, "other", NewConfig(4))
	folders := collectionFolders(t, fs)
	if err := db.CheckpointFull(); err != nil {
		t.Fatal(err)
	}

	p, err := db.PrepareImport(bytes.NewReader(img))
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	if got := db.List(); !slices.Equal(got, []string{"other"}) {
		t.Fatalf("collections %v before Commit", got)
	}
	c2, err := p.Commit("moved")
	if err != nil {
		t.Fatal(err)
	}
	if d := want.diff(readXferState(t, c2)); d != "" {
		t.Fatal(d)
	}
	if _, err := p.Commit("again"); err == nil {
		t.Fatal("a second Commit succeeded")
	}

	folders = collectionFolders(t, fs)
	p, err = db.PrepareImport(bytes.NewReader(img))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Commit("other"); !errors.Is(err, ErrCollectionExists) {
		t.Fatalf("Commit under a taken name: %v", err)
	}
	if got := collectionFolders(t, fs); !slices.Equal(got, folders) {
		t.Fatalf("folders %v after a failed Commit, want %v", got, folders)
	}
	before := db.DataMemory()
	p, err = db.PrepareImport(bytes.NewReader(img))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Abort(); err != nil {
		t.Fatal(err)
	}
	if got := collectionFolders(t, fs); !slices.Equal(got, folders) {
		t.Fatalf("folders %v after Abort, want %v", got, folders)
	}
	if after := db.DataMemory(); after != before {
		t.Fatalf("DataMemory %+v after an aborted import, %+v before", after, before)
	}
	if got := db.List(); !slices.Equal(got, []string{"moved", "other"}) {
		t.Fatalf("collections %v", got)
	}
	// The files of the collection prepared across a checkpoint are all
	// there: a reopen reads them.
	crashed := fs.Crash(vfs.DropUnsynced, rand.New(rand.NewSource(1)))
	db2, err := Open("/db", xferOpts(crashed))
	if err != nil {
		t.Fatal(err)
	}
	defer db2.Close()
	c3, err := db2.Collection("moved")
	if err != nil {
		t.Fatal(err)
	}
	if d := want.diff(readXferState(t, c3)); d != "" {
		t.Fatalf("after reopening: %s", d)
	}
}
