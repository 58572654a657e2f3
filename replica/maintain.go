package replica

import (
	"net"
	"strconv"
	"time"
)

// Background maintenance that changes logical state (expiry, prune
// policies) must not run on each replica on its own clock: replicas would
// delete different memories at different times, and a follower's deletes
// would not be in the raft log. The engines therefore run no sweeper and
// no pruner (engineOptions); instead the leader proposes RAFT.MAINTAIN
// every MaintainInterval, an ordinary entry that every replica applies at
// the entry's time with the engine's own sweep and prune (which depend
// only on the state and that time, so they delete the same memories
// everywhere). Compaction and index builds are physical and stay local.

// maintain proposes RAFT.MAINTAIN while this node leads.
func (n *Node) maintain() {
	defer n.wg.Done()
	if n.cfg.MaintainInterval < 0 {
		return
	}
	tick := time.NewTicker(n.cfg.MaintainInterval)
	defer tick.Stop()
	cmd := [][]byte{[]byte("RAFT.MAINTAIN")}
	for {
		select {
		case <-n.stop:
			return
		case <-tick.C:
			if !n.IsLeader() {
				continue
			}
			if _, err := n.Replicate(nil, cmd); err != nil {
				n.log.Debug("replica: maintenance not proposed", "err", err)
			}
		}
	}
}

func splitHostPort(addr string) (string, int, error) {
	host, p, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, err
	}
	port, err := strconv.Atoi(p)
	if err != nil || port <= 0 || port > 65535 {
		return "", 0, &net.AddrError{Err: "bad port", Addr: addr}
	}
	return host, port, nil
}

func joinHostPort(host string, port int) string {
	return net.JoinHostPort(host, strconv.Itoa(port))
}
