package cluster

import (
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"strconv"
)

// RaftPortOffset is added to a node's client port to give its raft port,
// as Redis adds 10,000 for its cluster bus.
const RaftPortOffset = 10000

// MaxIDLen is the longest node id.
const MaxIDLen = 40

// ErrBadID is returned for a node id that is not 1 to 40 of [a-z0-9-]:
// ids appear in file names (DIR/<node-id>) and in protocol replies, so
// they must need no quoting anywhere.
var ErrBadID = errors.New("cluster: a node id is 1 to 40 characters of a-z, 0-9 and '-'")

// ValidID returns ErrBadID unless id is a valid node id.
func ValidID(id string) error {
	if len(id) == 0 || len(id) > MaxIDLen {
		return ErrBadID
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-') {
			return ErrBadID
		}
	}
	return nil
}

// HexID returns the 40-hex-digit id Redis's protocol wants for a node (in
// CLUSTER NODES, SLOTS, SHARDS and MYID): the SHA-1 of the node id, so it
// is the same on every node and across restarts without being stored.
func HexID(id string) string {
	sum := sha1.Sum([]byte(id))
	return hex.EncodeToString(sum[:])
}

// RaftAddr returns the raft address of the node whose client address is
// clientAddr: the same host, the port plus RaftPortOffset. An address
// that cannot be split, or whose port plus the offset is beyond 65535,
// gives "" (ParseNodes refuses such addresses, so a parsed node always
// has one).
func RaftAddr(clientAddr string) string {
	host, port, err := splitAddr(clientAddr)
	if err != nil || port+RaftPortOffset > 65535 {
		return ""
	}
	return net.JoinHostPort(host, strconv.Itoa(port+RaftPortOffset))
}

// splitAddr splits host:port with a port in 1..65535 and a non-empty host.
func splitAddr(addr string) (host string, port int, err error) {
	host, ps, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, err
	}
	if host == "" {
		return "", 0, fmt.Errorf("address %q has no host", addr)
	}
	port, err = strconv.Atoi(ps)
	if err != nil || port < 1 || port > 65535 || strconv.Itoa(port) != ps {
		return "", 0, fmt.Errorf("address %q: port is not a number in 1..65535", addr)
	}
	return host, port, nil
}
