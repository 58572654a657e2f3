package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/memrl/memrl/engine"
	"github.com/memrl/memrl/internal/cliflag"
	"github.com/memrl/memrl/ivfpq"
	"github.com/memrl/memrl/vfs"
)

// memrl dump: a file's records or header in readable form, for operators
// and bug reports. The decoding is the engine's, the log's and the
// index's own (engine.DumpWAL, engine.DumpCheckpoint, engine.DumpVectors,
// ivfpq.Inspect); this file only picks one and prints. Nothing is
// written: a live server's files can be read.

// dumpKinds are the files memrl dump reads (dumpTo runs them).
var dumpKinds = []subcommand{
	{"wal", "DIR|FILE", "a log segment's records, or every segment's (DIR: the database or its wal folder), one line each", nil},
	{"checkpoint", "[-v] FILE", "a checkpoint's header, collections, counts and sections (-v: every memory)", nil},
	{"index", "FILE", "an IVF-PQ index file's header and list sizes (collections/<uid>/ivfpq/ivfpq.idx)", nil},
	{"vectors", "FILE", "a collection's vectors.sum header and row counts (FILE: vectors.sum or vectors.f32)", nil},
}

// dumpUsage is memrl dump --help's text.
func dumpUsage() string {
	return "usage:\n" + columns(usageRows("memrl dump", dumpKinds)) +
		"A damaged file prints what decodes, then the damage and its offset, and exits 1.\n"
}

func dump(args []string) error {
	if len(args) == 0 {
		return cliflag.Usagef("what to dump?\n%s", dumpUsage())
	}
	what := args[0]
	switch what {
	case "-h", "-help", "--help":
		fmt.Print(dumpUsage())
		return nil
	}
	if _, ok := lookup(dumpKinds, what); !ok {
		return cliflag.Usagef("unknown dump %q\n%s", what, dumpUsage())
	}
	fset := flag.NewFlagSet("dump "+what, flag.ContinueOnError)
	verbose := false
	if what == "checkpoint" {
		fset.BoolVar(&verbose, "v", false, "every memory and tombstone, with its sections")
	}
	fset.Usage = func() { fmt.Fprint(fset.Output(), dumpUsage()) }
	if err := cliflag.Parse(fset, args[1:], 1); err != nil {
		return err
	}
	if fset.NArg() != 1 {
		return cliflag.Usagef("dump %s needs a path\n%s", what, dumpUsage())
	}
	w := bufio.NewWriter(os.Stdout)
	err := dumpTo(w, what, fset.Arg(0), verbose)
	if ferr := w.Flush(); err == nil {
		err = ferr
	}
	return err
}

// dumpTo prints the dump of path to w.
func dumpTo(w io.Writer, what, path string, verbose bool) error {
	fs := vfs.Default
	switch what {
	case "wal":
		return engine.DumpWAL(w, fs, path)
	case "checkpoint":
		return engine.DumpCheckpoint(w, fs, path, verbose)
	case "vectors":
		return engine.DumpVectors(w, fs, path)
	}
	if st, err := fs.Stat(path); err == nil && st.IsDir() {
		path += "/" + ivfpq.FileName
	}
	fi, err := ivfpq.Inspect(fs, path)
	if errors.Is(err, ivfpq.ErrNotIndexFile) {
		// Some other file: its header's fields would be noise.
		return err
	}
	fmt.Fprintf(w, "index %s: %d bytes, version %d\n", path, fi.Size, fi.Version)
	if fi.Params.Dim != 0 {
		p := fi.Params
		fmt.Fprintf(w, "dim %d, metric %s (unit-norm IP %v), nlist %d, pqm %d, pqbits %d, rows %d, trained on %d\n",
			p.Dim, p.Metric, fi.UnitIP, p.NList, p.M, p.Bits, fi.Rows, fi.TrainedFor)
		fmt.Fprintf(w, "sections: centroids+codebooks @%d (%d bytes), directory @%d, lists @%d (%d bytes)\n",
			fi.MetaOff, fi.MetaLen, fi.DirOff, fi.DataOff, fi.DataLen)
	}
	if fi.ListSizes != nil {
		lo, med, hi, empty := fi.ListSummary()
		fmt.Fprintf(w, "lists: %d, vectors per list min %d median %d max %d, %d empty\n", len(fi.ListSizes), lo, med, hi, empty)
		for _, d := range fi.DamagedLists {
			fmt.Fprintf(w, "DAMAGED list %d: segment at byte %d fails its checksum\n", d.List, d.Offset)
		}
		if err == nil && len(fi.DamagedLists) > 0 {
			err = fmt.Errorf("%s: %d damaged lists", path, len(fi.DamagedLists))
		}
	}
	return err
}
