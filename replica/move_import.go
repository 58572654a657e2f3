package replica

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/memrl/memrl/engine"
	"github.com/memrl/memrl/server"
)

// The target side of a collection move (docs/CLUSTER.md "Resharding"),
// every step a replicated entry of the target shard's raft log, applied
// by every replica alike:
//
//	MEMRL.IMPORT BEGIN <collection> <move id>
//	MEMRL.IMPORT CHUNK <move id> <seq> <bytes>
//	MEMRL.IMPORT PREPARE <move id> <chunks>
//	MEMRL.IMPORT COMMIT <move id> <chunks> <X>
//	MEMRL.IMPORT SEAL <collection> <move id> <P>
//	MEMRL.IMPORT DONE <collection> <move id>
//	MEMRL.IMPORT DISCARD <collection> <move id>
//
// BEGIN starts staging (and drops any staging of the same collection by
// another move id: a re-run's new move supersedes a stale one). CHUNK
// appends the next chunk to the staged image, DIR/moves/<move id>.img in
// the engine's folder, so a raft snapshot taken mid-import ships it;
// chunks are at most maxChunk bytes (why: chunkBound) and come in order
// (seq from 0; a seq already staged is acknowledged again and changes
// nothing, so a mover can resend after an unknown outcome). PREPARE,
// once every chunk is staged, starts the import's long step in a
// goroutine on each replica (move_prepare.go). COMMIT imports the staged
// image (engine.DB.PrepareImport, done by PREPARE's goroutine or here,
// verifies it whole; PreparedImport.Commit creates the collection
// atomically), after which the collection is visible here, and MEMRL.REPLAY (move_apply.go) applies the source's
// commands after X to it. SEAL records that the source's final delta,
// up to its PAUSE entry P, is in. DONE forgets the import once the
// source has dropped its copy; DISCARD rolls an unfinished import back
// (drops the staged image, or the committed collection).

// maxChunk bounds a CHUNK's bytes. chunkBound: a raft entry is held in
// memory by hashicorp/raft (its log cache, the leader's in-flight
// entries, up to MaxAppendEntries of them in one AppendEntries RPC) and
// fsynced into raft-boltdb by every replica: 1 MiB entries keep an
// import's memory and each fsync's latency, hence the other writes'
// latency on the shard, bounded, at one commit per MiB.
const maxChunk = 1 << 20

var errImportSyntax = server.NewError("MEMRL.IMPORT BEGIN <coll> <id> | CHUNK <id> <seq> <bytes> | PREPARE <id> <chunks> | COMMIT <id> <chunks> <X> | SEAL <coll> <id> <P> | DONE <coll> <id> | DISCARD <coll> <id>")

// stagePath is the staged image of move id in db's folder.
func stagePath(db *engine.DB, id string) string {
	return filepath.Join(db.Dir(), moveStageDir, id+".img")
}

// cmdImport is MEMRL.IMPORT but DISCARD (applyDiscard, move_apply.go).
func (n *Node) cmdImport(c *server.Ctx, args [][]byte) error {
	if c.InTransaction() {
		return errMoveInTx
	}
	if len(args) < 3 {
		return errImportSyntax
	}
	db := n.DB()
	n.moves.mu.Lock()
	defer n.moves.mu.Unlock()
	t, err := n.moves.tablesLocked(db)
	if err != nil {
		return err
	}
	sub := strings.ToUpper(string(args[0]))
	var reply func()
	switch {
	case sub == "BEGIN" && len(args) == 3:
		reply, err = n.importBeginLocked(db, t, string(args[1]), string(args[2]))
	case sub == "CHUNK" && len(args) == 4:
		reply, err = n.importChunkLocked(db, t, string(args[1]), args[2], args[3])
	case sub == "PREPARE" && len(args) == 3:
		reply, err = n.importPrepareLocked(db, t, string(args[1]), args[2])
	case sub == "COMMIT" && len(args) == 4:
		reply, err = n.importCommitLocked(db, t, string(args[1]), args[2], args[3])
	case sub == "SEAL" && len(args) == 4:
		reply, err = n.importSealLocked(t, string(args[1]), string(args[2]), args[3])
	case sub == "DONE" && len(args) == 3:
		if r, ok := t.imports[string(args[1])]; ok && r.moveID == string(args[2]) && r.state != importStaging {
			delete(t.imports, string(args[1]))
		}
		reply = c.WriteOK
	default:
		return errImportSyntax
	}
	if err != nil {
		return err
	}
	if err := n.saveMovesLocked(); err != nil {
		return err
	}
	if reply == nil {
		c.WriteOK()
	} else {
		reply()
	}
	return nil
}

// findImportLocked returns the collection staging or holding move id.
func findImportLocked(t *moveTables, id string) (string, importRec, bool) {
	for name, r := range t.imports {
		if r.moveID == id {
			return name, r, true
		}
	}
	return "", importRec{}, false
}

func (n *Node) importBeginLocked(db *engine.DB, t *moveTables, name, id string) (func(), error) {
	if !validMoveID(id) {
		return nil, errMoveID
	}
	if r, ok := t.imports[name]; ok {
		if r.moveID == id {
			return nil, nil // a repeated BEGIN
		}
		if r.state != importStaging {
			return nil, server.NewError("MEMRL.IMPORT BEGIN: " + name + " was imported by move " + r.moveID + "; DISCARD or DONE it first")
		}
		n.preps.drop(r.moveID)
		os.Remove(stagePath(db, r.moveID))
		delete(t.imports, name)
	}
	if _, err := db.Collection(name); err == nil {
		return nil, server.NewError("MEMRL.IMPORT BEGIN: this shard already has a collection " + strconv.Quote(name))
	}
	if err := os.MkdirAll(filepath.Join(db.Dir(), moveStageDir), 0o755); err != nil {
		return nil, err
	}
	if err := os.WriteFile(stagePath(db, id), nil, 0o644); err != nil {
		return nil, err
	}
	t.imports[name] = importRec{moveID: id, state: importStaging}
	return nil, nil
}

func (n *Node) importChunkLocked(db *engine.DB, t *moveTables, id string, seqArg, data []byte) (func(), error) {
	name, r, ok := findImportLocked(t, id)
	if !ok || r.state != importStaging {
		return nil, server.NewError("MEMRL.IMPORT CHUNK: no import " + strconv.Quote(id) + " is staging here")
	}
	seq, err := strconv.ParseUint(string(seqArg), 10, 64)
	if err != nil {
		return nil, errImportSyntax
	}
	if len(data) > maxChunk {
		return nil, server.NewError("MEMRL.IMPORT CHUNK: a chunk is at most " + strconv.Itoa(maxChunk) + " bytes")
	}
	if seq < r.chunks {
		return nil, nil // staged already: a resent chunk
	}
	if seq > r.chunks {
		return nil, server.NewError("MEMRL.IMPORT CHUNK: chunk " + strconv.FormatUint(seq, 10) + " out of order (next is " + strconv.FormatUint(r.chunks, 10) + ")")
	}
	f, err := os.OpenFile(stagePath(db, id), os.O_WRONLY, 0)
	if err != nil {
		return nil, err
	}
	// Write at the recorded size, whatever the file's: what the state
	// says is staged is what is.
	_, err = f.WriteAt(data, r.bytes)
	if err == nil {
		err = f.Truncate(r.bytes + int64(len(data)))
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}
	// A chunk after PREPARE: a job may have read the image without it,
	// so COMMIT prepares again.
	n.preps.drop(id)
	r.chunks++
	r.bytes += int64(len(data))
	t.imports[name] = r
	return nil, nil
}

func (n *Node) importCommitLocked(db *engine.DB, t *moveTables, id string, chunksArg, xArg []byte) (func(), error) {
	name, r, ok := findImportLocked(t, id)
	if !ok {
		return nil, server.NewError("MEMRL.IMPORT COMMIT: no import " + strconv.Quote(id) + " here")
	}
	if r.state != importStaging {
		return nil, nil // committed already
	}
	chunks, err1 := strconv.ParseUint(string(chunksArg), 10, 64)
	x, err2 := strconv.ParseUint(string(xArg), 10, 64)
	if err1 != nil || err2 != nil {
		return nil, errImportSyntax
	}
	if chunks != r.chunks {
		return nil, server.NewError("MEMRL.IMPORT COMMIT: " + strconv.FormatUint(r.chunks, 10) + " chunks are staged, not " + strconv.FormatUint(chunks, 10))
	}
	path := stagePath(db, id)
	_, ierr := n.importStaged(db, name, id, path)
	os.Remove(path)
	if ierr != nil {
		// A refused image is refused alike by every replica (the same
		// bytes): the staging is dropped and the mover starts again.
		// (importStaged stopped the process for a local error.)
		delete(t.imports, name)
		n.log.Error("replica: import refused", "collection", name, "move", id, "err", ierr)
		return nil, server.NewError("MEMRL.IMPORT COMMIT: " + ierr.Error())
	}
	r.state = importCommitted
	r.pos = replayPos{index: x, sub: ^uint64(0)} // the image holds everything up to X
	t.imports[name] = r
	return nil, nil
}

func (n *Node) importSealLocked(t *moveTables, name, id string, pArg []byte) (func(), error) {
	r, ok := t.imports[name]
	if !ok || r.moveID != id || r.state == importStaging {
		return nil, server.NewError("MEMRL.IMPORT SEAL: " + name + " is not committed here by move " + id)
	}
	p, err := strconv.ParseUint(string(pArg), 10, 64)
	if err != nil {
		return nil, errImportSyntax
	}
	r.state, r.seal = importSealed, p
	t.imports[name] = r
	return nil, nil
}

// importPrepareLocked is PREPARE: every chunk is staged; start preparing
// the image in a goroutine (move_prepare.go). It changes no replicated
// state: COMMIT decides.
func (n *Node) importPrepareLocked(db *engine.DB, t *moveTables, id string, chunksArg []byte) (func(), error) {
	_, r, ok := findImportLocked(t, id)
	if !ok {
		return nil, server.NewError("MEMRL.IMPORT PREPARE: no import " + strconv.Quote(id) + " here")
	}
	if r.state != importStaging {
		return nil, nil // committed already
	}
	chunks, err := strconv.ParseUint(string(chunksArg), 10, 64)
	if err != nil {
		return nil, errImportSyntax
	}
	if chunks != r.chunks {
		return nil, server.NewError("MEMRL.IMPORT PREPARE: " + strconv.FormatUint(r.chunks, 10) + " chunks are staged, not " + strconv.FormatUint(chunks, 10))
	}
	n.preps.start(db, id, stagePath(db, id))
	return nil, nil
}

// importStaged imports move id's image, staged at path, into db as
// collection name: PREPARE's job's outcome if this replica has one for
// db, else prepared here. It returns an error that every replica meets
// alike (the image refused, the name taken, too many collections: each
// decided at this entry's place in the log); for any other error it
// stops the process (Node.fatal) rather than diverge, and returns it.
// REQUIRES: called while applying COMMIT.
func (n *Node) importStaged(db *engine.DB, name, id, path string) (*engine.Collection, error) {
	var p *engine.PreparedImport
	var err error
	if j := n.preps.take(db, id); j != nil {
		p, err = j.wait()
	}
	if p == nil && (err == nil || !imageRefused(err)) {
		// No job, or one whose failure may be this replica's alone (or
		// a matter of timing, as too many collections at that moment):
		// prepare again here, where the outcome is decided.
		p, err = prepareFile(db, path, nil)
	}
	if err == nil {
		var c *engine.Collection
		if c, err = p.Commit(name); err == nil {
			return c, nil
		}
	} else if p != nil {
		p.Abort()
	}
	if imageRefused(err) || errors.Is(err, engine.ErrCollectionExists) || errors.Is(err, engine.ErrTooManyCollections) {
		return nil, err
	}
	err = fmt.Errorf("replica: import of %q (move %s) failed here, not for a reason every replica meets alike: %w", name, id, err)
	n.fatal(err)
	return nil, err
}

// cmdImportReady is MEMRL.IMPORTREADY <move id>, answered by this node
// alone: 1 if its PREPARE job for the move has ended (COMMIT will not
// wait for it), 0 if it runs, -1 if it has none (COMMIT would prepare on
// the apply goroutine). The mover asks the target's leader before COMMIT.
func (n *Node) cmdImportReady(c *server.Ctx, args [][]byte) error {
	if len(args) != 1 {
		return c.WrongArity()
	}
	db, id := n.DB(), string(args[0])
	switch {
	case n.preps.ready(db, id):
		c.WriteInt(1)
	case n.preps.has(db, id):
		c.WriteInt(0)
	default:
		c.WriteInt(-1)
	}
	return nil
}
