// Package cluster holds what a memrl node needs to know to take part in a
// cluster spoken to as a Redis Cluster: the hash slot of a key, the nodes
// file that names every node, the slot map that gives each slot to a
// shard, and the table of each shard's current leader (learned for other
// shards by asking their nodes ROLE). It knows nothing of the server or the
// engine; the server's router (server/route.go) and the CLUSTER commands
// read it. docs/CLUSTER.md, "Sharding and routing", is the design.
//
// # Slots
//
// There are NumSlots (16,384) slots. A key's slot is CRC16-XMODEM of the
// key modulo 16,384, exactly as Redis computes it, including the hash tag
// rule: if the key holds a '{' followed later by a '}' with at least one
// byte between them, only the bytes between the first '{' and the first
// '}' after it are hashed, so "{user1000}.following" and
// "{user1000}.followers" share a slot. The key of every MEM.* command is
// its collection name.
//
// # Nodes file
//
// DIR/nodes.tsv names every node, one a line, fields separated by one tab:
//
//	# memrl nodes v1
//	node-id <TAB> client-addr (host:port) <TAB> shard (0-based) <TAB> pid
//	# sum <crc32c of every byte before this line, 8 hex digits>
//
// The first line must be the version header; other lines starting with
// '#' and blank lines are comments. Node ids match [a-z0-9-]{1,40} and are
// unique, as are client addresses; shards are numbered 0..S-1 with every
// shard holding at least one node, and S is at most 16,384 (a slot per
// shard); pid is a process id (0: unknown). The
// "# sum" line is written by WriteNodes and, when present, must be the
// last line and match: a damaged file is refused rather than half read. A
// file written by hand may leave it out (an edit would otherwise need a
// checksum tool); ParseNodes then checks only the syntax.
//
// A node's raft address is its client host with the port plus 10,000
// (RaftAddr), as Redis's cluster bus; its 40-hex-digit protocol id is the
// SHA-1 of its node id (HexID), stable across restarts.
//
// # Slot map
//
// Shard s of S owns slots [s*16384/S, (s+1)*16384/S) (DefaultSlots),
// unless DIR/slots.tsv, beside the nodes file, says otherwise:
//
//	# memrl slots v1
//	first-slot <TAB> last-slot <TAB> shard
//
// with inclusive ranges that together cover every slot exactly once. It
// carries the same optional "# sum" line as the nodes file.
//
// # Leaders
//
// State holds the topology (replaced whole by Reload) and who leads each
// shard: this node's own shard from Config.Leader (the replication layer;
// nil means the node leads alone, for a shard of one node), every other
// shard from its nodes' answers to ROLE, asked over loopback every
// PollInterval (Run). The node that answers "master" leads; if two do, the
// first in the nodes file; if none does, the shard has no leader known
// until the next round. Do is the minimal RESP2 client those questions
// use; it reads at most 64 MiB of one reply. Reload keeps the old
// topology unless the new one still names this node in the same shard at
// the same address.
package cluster
