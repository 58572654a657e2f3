// Command xfer measures the export and import of a whole collection
// (issue 28, engine/collection_export.go): time, image bytes and memory.
// Each phase runs in its own process, so that its peak RSS (VmHWM) is its
// own:
//
//	go run ./bench/xfer -phase build  -dir D -n 1000000 -dim 16
//	go run ./bench/xfer -phase export -dir D   # D/src -> D/image
//	go run ./bench/xfer -phase import -dir D   # D/image -> D/dst (removed first)
//
// build fills collection "c" of D/src with n random memories (a 32-byte
// payload, attributes on every memory, a key on every fourth), rewards a
// tenth of them, deletes a twentieth, snapshots it, and closes (a full
// checkpoint). export opens D/src and reports the time BeginExport held
// the collection, WriteTo's time and bytes; import reports the time of
// ImportCollection's two steps (PrepareImport, Commit). Both report the RSS after opening (the
// database's own) and the peak.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"log"
	"math/rand"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strings"
	"syscall"
	"time"

	"github.com/memrl/memrl/engine"
	"github.com/memrl/memrl/wal"
)

func main() {
	phase := flag.String("phase", "", "build, export or import")
	dir := flag.String("dir", "", "work folder")
	n := flag.Int("n", 100000, "memories (build)")
	dim := flag.Int("dim", 16, "dimension (build)")
	index := flag.String("index", "flat", "flat or ivfpq (build)")
	prof := flag.String("cpuprofile", "", "write a CPU profile of the phase here")
	flag.Parse()
	if *prof != "" {
		f, err := os.Create(*prof)
		if err != nil {
			log.Fatal(err)
		}
		pprof.StartCPUProfile(f)
		defer pprof.StopCPUProfile()
	}
	if *dir == "" {
		log.Fatal("-dir is required")
	}
	var err error
	switch *phase {
	case "build":
		err = build(*dir, *n, *dim, *index)
	case "export":
		err = export(*dir)
	case "import":
		err = imp(*dir)
	default:
		log.Fatal("-phase must be build, export or import")
	}
	if err != nil {
		log.Print(err)
	}
}

func opts() engine.Options {
	return engine.Options{Sync: wal.SyncNone, CheckpointInterval: -1, CheckpointBytes: -1,
		Logf: func(string, ...any) {}, CompactShare: -1}
}

func build(dir string, n, dim int, index string) error {
	src := filepath.Join(dir, "src")
	if err := os.RemoveAll(src); err != nil {
		return err
	}
	db, err := engine.Open(src, opts())
	if err != nil {
		return err
	}
	cfg := engine.NewConfig(dim)
	cfg.Metric = engine.L2
	if index == "flat" {
		cfg.Index.Kind = engine.IndexFlat
	}
	if err := db.Create("c", cfg); err != nil {
		return err
	}
	c, _ := db.Collection("c")
	rng := rand.New(rand.NewSource(1))
	start := time.Now()
	const batch = 1000
	for i := 0; i < n; i += batch {
		reqs := make([]engine.AddRequest, 0, batch)
		for j := i; j < min(i+batch, n); j++ {
			v := make([]float32, dim)
			for k := range v {
				v[k] = rng.Float32()*2 - 1
			}
			r := engine.AddRequest{Vector: v, Payload: []byte(fmt.Sprintf("payload of memory %014d", j)),
				Attrs: []byte(fmt.Sprintf(`{"t":%d}`, j%10))}
			if j%4 == 0 {
				r.Key = fmt.Sprint("k", j)
			}
			reqs = append(reqs, r)
		}
		if _, err := c.AddBatch(reqs); err != nil {
			return err
		}
	}
	for i := 0; i < n/10; i++ {
		if _, err := c.Reward(rng.Float64(), []uint64{1 + uint64(rng.Intn(n))}, nil); err != nil {
			return err
		}
	}
	var del []uint64
	for id := uint64(1); id <= uint64(n); id += 20 {
		del = append(del, id)
	}
	if _, err := c.Delete(del); err != nil {
		return err
	}
	if err := c.Snapshot("s"); err != nil {
		return err
	}
	if index != "flat" {
		for deadline := time.Now().Add(30 * time.Minute); time.Now().Before(deadline); time.Sleep(time.Second) {
			if info, _ := c.Info(); strings.HasPrefix(info.Index, "ivfpq") {
				break
			}
		}
	}
	info, _ := c.Info()
	if err := db.Close(); err != nil {
		return err
	}
	fmt.Printf("build: %d memories (%d rows) of dim %d, index %q, in %v\n", info.Count, info.Rows, dim, info.Index, time.Since(start).Round(time.Millisecond))
	return nil
}

func export(dir string) error {
	db, err := engine.Open(filepath.Join(dir, "src"), opts())
	if err != nil {
		return err
	}
	defer db.Close()
	c, err := db.Collection("c")
	if err != nil {
		return err
	}
	base := rss()
	c0 := cpu()
	t0 := time.Now()
	e, err := c.BeginExport()
	if err != nil {
		return err
	}
	cut, cutCPU := time.Since(t0), cpu()-c0
	f, err := os.Create(filepath.Join(dir, "image"))
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	t1 := time.Now()
	nb, err := e.WriteTo(w)
	if err == nil {
		err = w.Flush()
	}
	if err == nil {
		err = f.Sync()
	}
	if err != nil {
		return err
	}
	took := time.Since(t1)
	f.Close()
	e.Close()
	fmt.Printf("export: %d memories; BeginExport held the collection %v (process CPU %v); WriteTo %v, %d bytes (%.1f MB/s incl. fsync); CPU %v; RSS %s after open, peak %s\n",
		e.Memories(), cut.Round(time.Microsecond), cutCPU.Round(time.Microsecond), took.Round(time.Millisecond), nb, float64(nb)/1e6/took.Seconds(), (cpu() - c0).Round(time.Millisecond), base, peak())
	return nil
}

func imp(dir string) error {
	dst := filepath.Join(dir, "dst")
	if err := os.RemoveAll(dst); err != nil {
		return err
	}
	db, err := engine.Open(dst, opts())
	if err != nil {
		return err
	}
	defer db.Close()
	f, err := os.Open(filepath.Join(dir, "image"))
	if err != nil {
		return err
	}
	defer f.Close()
	st, _ := f.Stat()
	base := rss()
	c0 := cpu()
	t0 := time.Now()
	p, err := db.PrepareImport(bufio.NewReaderSize(f, 1<<20))
	if err != nil {
		return err
	}
	prep := time.Since(t0)
	c, err := p.Commit("c")
	if err != nil {
		return err
	}
	took, used := time.Since(t0), cpu()-c0
	info, _ := c.Info()
	runtime.GC()
	fmt.Printf("import: %d memories (%d rows), index %q, from %d bytes in %v (%.1f MB/s; PrepareImport %v, Commit %v), CPU %v; RSS %s before, %s after, peak %s\n",
		info.Count, info.Rows, info.Index, st.Size(), took.Round(time.Millisecond), float64(st.Size())/1e6/took.Seconds(),
		prep.Round(time.Millisecond), (took - prep).Round(time.Millisecond), used.Round(time.Millisecond), base, rss(), peak())
	return nil
}

// status returns a field of /proc/self/status (Linux), e.g. VmRSS.
func status(field string) string {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return "?"
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, field+":"); ok {
			return strings.Join(strings.Fields(v), " ")
		}
	}
	return "?"
}

func rss() string { return status("VmRSS") }

// cpu returns the process's user and system CPU time so far: on a shared
// machine, the work done, whatever the wall clock says.
func cpu() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
func peak() string { return status("VmHWM") }
