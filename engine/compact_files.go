package engine

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/memrl/memrl/engine/ckptfile"
	"github.com/memrl/memrl/vfs"
)

// The files of a collection are named by their generation (compact.go):
// generation 0, the names from before compaction existed, is
// vectors.f32, vectors.sum, payloads.dat and ivfpq/; generation g > 0 is
// vectors.<g>.f32, vectors.<g>.sum, payloads.<g>.dat and ivfpq.<g>/. A
// compaction writes generation g+1 beside g, and the checkpoint that
// commits it records g+1 in the collection's compaction section, so the
// files a checkpoint refers to and the checkpoint become current in one
// atomic rename. Files of any other generation are leftovers (of an
// unfinished compaction, or of the one before a finished one) and are
// removed at open (removeStaleGensLocked).
const (
	vecBase   = "vectors"
	vecExt    = ".f32"
	sumsExt   = ".sum"
	payBase   = "payloads"
	payExt    = ".dat"
	indexBase = "ivfpq"
)

// genFiles lists the (base, extension) of every generation-named file.
var genFiles = [][2]string{{vecBase, vecExt}, {vecBase, sumsExt}, {payBase, payExt}, {indexBase, ""}, {remapBase, remapExt}}

// genName names the file base+ext of generation gen.
func genName(base, ext string, gen uint64) string {
	if gen == 0 {
		return base + ext
	}
	return base + "." + strconv.FormatUint(gen, 10) + ext
}

// fileGen reports the generation of a collection folder entry, and
// whether it is a generation-named file at all.
func fileGen(name string) (uint64, bool) {
	for _, f := range genFiles {
		base, ext := f[0], f[1]
		if name == base+ext {
			return 0, true
		}
		mid, ok := strings.CutPrefix(name, base+".")
		if !ok || !strings.HasSuffix(mid, ext) {
			continue
		}
		mid = strings.TrimSuffix(mid, ext)
		if g, err := strconv.ParseUint(mid, 10, 64); err == nil && g > 0 && mid == strconv.FormatUint(g, 10) {
			return g, true
		}
	}
	return 0, false
}

// isRemapTemp reports whether name is the temporary file
// vfs.WriteFileAtomic writes before a row map ("remap.<gen>.map.tmp").
func isRemapTemp(name string) bool {
	mid, ok := strings.CutSuffix(name, remapExt+".tmp")
	if !ok {
		return false
	}
	_, ok = fileGen(mid + remapExt)
	return ok && strings.HasPrefix(mid, remapBase+".")
}

// genPaths returns the files (not the index folder) of generation gen in dir.
func genPaths(dir string, gen uint64) []string {
	return []string{
		filepath.Join(dir, genName(vecBase, vecExt, gen)),
		filepath.Join(dir, genName(vecBase, sumsExt, gen)),
		filepath.Join(dir, genName(payBase, payExt, gen)),
		remapPath(dir, gen), // remap.go; absent but for a compaction's generation
	}
}

// removeGen removes the files and index folder of generation gen,
// paced (they can be gigabytes), and syncs the folder.
func (c *Collection) removeGen(gen uint64) error {
	if c.xport.deferRemoval(gen) {
		return nil // an export reads them; its Close removes them (collection_export.go)
	}
	fs := c.db.fs
	for _, p := range genPaths(c.dir, gen) {
		if err := c.db.files.forget(p); err != nil {
			return err
		}
	}
	if err := vfs.RemoveFilesPaced(fs, c.dir, genPaths(c.dir, gen)); err != nil {
		return err
	}
	if err := vfs.RemoveAllPaced(fs, filepath.Join(c.dir, genName(indexBase, "", gen))); err != nil {
		return err
	}
	return fs.SyncDir(c.dir)
}

// removeStaleGensLocked removes every generation-named file of the
// collection's folder but the current generation's: what an unfinished
// compaction wrote, or what a finished one had not yet removed when the
// process stopped. Nothing refers to them: the checkpoint names c.gen, and
// the log's records after it refer to c.gen's rows.
// REQUIRES: c not yet shared (Open).
func (c *Collection) removeStaleGensLocked() error {
	names, err := c.db.fs.List(c.dir)
	if err != nil {
		return err
	}
	stale := map[uint64]bool{}
	for _, n := range names {
		if isRemapTemp(n) {
			// A row map's temporary copy, left by a crash while it was
			// written (vfs.WriteFileAtomic): nothing reads it.
			if err := c.db.fs.Remove(filepath.Join(c.dir, n)); err != nil {
				return fmt.Errorf("engine: collection %q: removing %s: %w", c.name, n, err)
			}
			continue
		}
		if g, ok := fileGen(n); ok && g != c.gen {
			stale[g] = true
		}
	}
	for g := range stale {
		if err := c.removeGen(g); err != nil {
			return fmt.Errorf("engine: collection %q: removing files of generation %d: %w", c.name, g, err)
		}
	}
	return nil
}

// The compaction section (tag sectCompact) of a collection's checkpoint
// records the generation of its files (ckptfile.AppendCompact has the
// layout). A collection that was never compacted writes none (generation
// 0). The checkpoint's checksum covers it; a version or length this build
// does not know is damage (ErrCorruptCheckpoint).
const compactSectVersion = ckptfile.CompactVersion

func encodeCompactSection(gen uint64) []byte { return ckptfile.AppendCompact(gen) }

// errBadCompactSection: the compaction section is 9 bytes of version 1.
var errBadCompactSection = ckptfile.ErrBadCompact

// collGen returns the file generation a checkpointed collection records.
func collGen(cc ckptCollection) (uint64, error) {
	for _, s := range cc.sections {
		if s.Tag != sectCompact {
			continue
		}
		gen, err := ckptfile.DecodeCompact(s.Data)
		if err != nil {
			return 0, fmt.Errorf("%w: collection %q: %w", ErrCorruptCheckpoint, cc.name, err)
		}
		return gen, nil
	}
	return 0, nil
}
