package main

import (
	"fmt"
	"syscall"
)

// Descriptors for clients and for the database.
//
// Every connection holds a file descriptor, and so do the log, the
// checkpoints and the collections' files (at most --max-open-files of
// them). If clients could take every descriptor, the next log roll would
// fail and stop all writes; so, as Redis does, the client limit is lowered
// at start to what the process's descriptor limit leaves after the
// database's share. (Go raises the soft RLIMIT_NOFILE to the hard one at
// start, so the limit read here is usually the hard one.)

// fdReserve is what the database may hold open besides its collection
// files: log segments, a checkpoint being written and the one being freed,
// directories being synced, the metrics listener, the listening socket,
// standard streams, with room to spare.
const fdReserve = 64

// fitMaxClients returns the client limit that fits a descriptor limit of
// nofile with maxOpenFiles collection files, and a warning when it had to
// lower maxClients; an error if no client would fit.
func fitMaxClients(maxClients, maxOpenFiles int, nofile uint64) (int, string, error) {
	need := uint64(maxOpenFiles) + fdReserve
	if nofile <= need {
		return 0, "", fmt.Errorf("the open-file limit (ulimit -n) is %d, but the database alone may use %d "+
			"(--max-open-files %d + %d): raise the limit or lower --max-open-files", nofile, need, maxOpenFiles, fdReserve)
	}
	if fit := nofile - need; uint64(maxClients) > fit {
		return int(fit), fmt.Sprintf("--maxclients %d lowered to %d: the open-file limit (ulimit -n) is %d and the "+
			"database may use %d of them; raise the limit to allow more clients", maxClients, fit, nofile, need), nil
	}
	return maxClients, "", nil
}

// openFileLimit returns the process's soft RLIMIT_NOFILE.
func openFileLimit() (uint64, error) {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return 0, err
	}
	return rl.Cur, nil
}
