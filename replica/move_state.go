package replica

import (
	"bytes"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/memrl/memrl/engine"
)

// The replicated state of collection moves (docs/CLUSTER.md
// "Resharding"): on a source shard, the collections whose writes are
// paused for a move's final delta; on a target shard, the collections
// being imported (staged, committed, sealed) and how far the source's
// log has been replayed into each. Every replica changes it only while
// applying entries, in log order, so all hold the same.
//
// It is kept in moves.tsv in the engine's folder, rewritten (temporary
// file, rename) at each change, so that the raft snapshot ships it with
// the engine's files and a replica installing a snapshot reads it back.
// It is not fsynced: the engine's folder is rebuilt from the raft
// snapshot and log at every start, never read back after a crash.
//
// Format, version 1 (text, tab-separated):
//
//	memrl-moves 1
//	paused	<collection>	<move id>	<index of the PAUSE entry>
//	import	<collection>	<move id>	<state>	<chunks>	<bytes>	<replay index>	<replay sub>	<seal index>
//	sum	<CRC-32C of every byte before this line, 8 hex digits>
//
// A missing file is the empty state; a file with another header, a bad
// line or a checksum mismatch is refused (errBadMoveFile), which refuses
// the snapshot or stops the apply that reads it.

const (
	moveFileName = "moves.tsv"
	moveHeader   = "memrl-moves 1"
	// moveStageDir is the folder, in the engine's folder, of the staged
	// images of imports not yet committed (<move id>.img).
	moveStageDir = "moves"
)

// errBadMoveFile reports a moves.tsv that does not parse or whose sum
// does not match.
var errBadMoveFile = errors.New("replica: malformed or damaged " + moveFileName)

// Import states on a target.
const (
	importStaging   = "staging"   // chunks being staged; not visible
	importCommitted = "committed" // the collection exists; delta replays apply
	importSealed    = "sealed"    // the final delta is in; the source may drop it
)

// pauseRec is a paused collection on a source.
type pauseRec struct {
	moveID string
	index  uint64 // the raft index of the PAUSE entry
}

// replayPos orders the source's commands: the raft index of the entry
// and the command's place in it (a batch entry holds several).
type replayPos struct{ index, sub uint64 }

func (p replayPos) after(q replayPos) bool {
	return p.index > q.index || p.index == q.index && p.sub > q.sub
}

// importRec is a collection being imported on a target.
type importRec struct {
	moveID string
	state  string
	chunks uint64 // staged chunks (staging)
	bytes  int64  // staged bytes (staging)
	pos    replayPos
	seal   uint64 // the source's PAUSE index (sealed)
}

// moveTables is the state itself.
type moveTables struct {
	paused  map[string]pauseRec
	imports map[string]importRec
}

// moveState is a node's move state, read from the engine it belongs to.
type moveState struct {
	mu sync.Mutex // guards db, t
	// db is the engine t was read from: the node's engine is replaced
	// whole by a snapshot's (fsm.Restore), after which t is read again.
	db *engine.DB
	t  moveTables

	// loaded is db and pausedAny whether t.paused has any collection,
	// both set with mu held, read without it by the apply path's
	// fast check (quiet).
	loaded    atomic.Pointer[engine.DB]
	pausedAny atomic.Bool
}

// quiet reports, without the lock, that db's state is loaded and pauses
// no collection: the apply path then checks nothing more.
func (s *moveState) quiet(db *engine.DB) bool {
	return s.loaded.Load() == db && !s.pausedAny.Load()
}

// lookupMove returns a copy of name's record in the table of db's move
// state that table picks (pausedTable, importsTable), or ok false. It
// holds s.mu for the lookup only: its callers (applyFinish, applyDiscard,
// applyReplay) apply a command after the lookup, without the lock, and
// take s.mu again to change the tables.
func lookupMove[R any](s *moveState, db *engine.DB, table func(*moveTables) map[string]R, name string) (r R, ok bool, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, err := s.tablesLocked(db)
	if err != nil {
		return r, false, err
	}
	r, ok = table(t)[name]
	return r, ok, nil
}

// pausedTable and importsTable pick a table for lookupMove.
func pausedTable(t *moveTables) map[string]pauseRec   { return t.paused }
func importsTable(t *moveTables) map[string]importRec { return t.imports }

// changedLocked updates what quiet reads. REQUIRES: s.mu held.
func (s *moveState) changedLocked() {
	s.pausedAny.Store(len(s.t.paused) > 0)
	s.loaded.Store(s.db)
}

// tablesLocked returns the state of db, reading it from db's folder if it
// was read from another engine. REQUIRES: s.mu held.
func (s *moveState) tablesLocked(db *engine.DB) (*moveTables, error) {
	if s.db != db {
		t, err := readMoveFile(filepath.Join(db.Dir(), moveFileName))
		if err != nil {
			return nil, err
		}
		s.db, s.t = db, t
		s.changedLocked()
	}
	return &s.t, nil
}

// saveLocked writes t to db's folder. REQUIRES: s.mu held.
func (s *moveState) saveLocked(db *engine.DB) error {
	path := filepath.Join(db.Dir(), moveFileName)
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, encodeMoveFile(s.t), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// encodeMoveFile returns t in the file format, lines sorted.
func encodeMoveFile(t moveTables) []byte {
	var lines []string
	for c, p := range t.paused {
		lines = append(lines, strings.Join([]string{"paused", c, p.moveID, strconv.FormatUint(p.index, 10)}, "\t"))
	}
	for c, r := range t.imports {
		lines = append(lines, strings.Join([]string{"import", c, r.moveID, r.state,
			strconv.FormatUint(r.chunks, 10), strconv.FormatInt(r.bytes, 10),
			strconv.FormatUint(r.pos.index, 10), strconv.FormatUint(r.pos.sub, 10),
			strconv.FormatUint(r.seal, 10)}, "\t"))
	}
	sort.Strings(lines)
	var b bytes.Buffer
	b.WriteString(moveHeader + "\n")
	for _, l := range lines {
		b.WriteString(l + "\n")
	}
	fmt.Fprintf(&b, "sum\t%08x\n", crc32.Checksum(b.Bytes(), crc32.MakeTable(crc32.Castagnoli)))
	return b.Bytes()
}

// readMoveFile reads path (the empty state if it does not exist).
func readMoveFile(path string) (moveTables, error) {
	t := moveTables{paused: map[string]pauseRec{}, imports: map[string]importRec{}}
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return t, nil
	}
	if err != nil {
		return t, err
	}
	return t, decodeMoveFile(data, &t)
}

// decodeMoveFile parses data into t.
func decodeMoveFile(data []byte, t *moveTables) error {
	bad := func(why string) error { return fmt.Errorf("%w: %s", errBadMoveFile, why) }
	if !bytes.HasSuffix(data, []byte("\n")) {
		return bad("cut short")
	}
	body := data[:len(data)-1]
	i := bytes.LastIndexByte(body, '\n')
	if i < 0 {
		return bad("no sum line")
	}
	content, sumLine := data[:i+1], string(body[i+1:])
	want := fmt.Sprintf("sum\t%08x", crc32.Checksum(content, crc32.MakeTable(crc32.Castagnoli)))
	if sumLine != want {
		return bad("checksum mismatch")
	}
	lines := strings.Split(strings.TrimSuffix(string(content), "\n"), "\n")
	if lines[0] != moveHeader {
		return bad("header " + strconv.Quote(lines[0]) + ", want " + strconv.Quote(moveHeader))
	}
	num := func(s string) (uint64, bool) {
		n, err := strconv.ParseUint(s, 10, 64)
		return n, err == nil
	}
	for _, l := range lines[1:] {
		f := strings.Split(l, "\t")
		switch {
		case f[0] == "paused" && len(f) == 4:
			idx, ok := num(f[3])
			if !ok {
				return bad("line " + strconv.Quote(l))
			}
			t.paused[f[1]] = pauseRec{moveID: f[2], index: idx}
		case f[0] == "import" && len(f) == 9:
			var n [5]uint64
			for k := range n {
				v, ok := num(f[4+k])
				if !ok {
					return bad("line " + strconv.Quote(l))
				}
				n[k] = v
			}
			switch f[3] {
			case importStaging, importCommitted, importSealed:
			default:
				return bad("import state " + strconv.Quote(f[3]))
			}
			t.imports[f[1]] = importRec{moveID: f[2], state: f[3], chunks: n[0], bytes: int64(n[1]),
				pos: replayPos{n[2], n[3]}, seal: n[4]}
		default:
			return bad("line " + strconv.Quote(l))
		}
	}
	return nil
}

// validMoveID reports whether id is a move id: 1 to 40 characters of
// a-z, 0-9 and '-' (it names a staged file).
func validMoveID(id string) bool {
	if len(id) == 0 || len(id) > 40 {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}
