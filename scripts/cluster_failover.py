#!/usr/bin/python3
"""Time from a shard leader's SIGTERM (a planned restart) and from its
SIGKILL to the next write acknowledged to a redis-py RedisCluster client.

Starts one `memrl cluster start` cluster per binary given (1 shard x 3
replicas, loopback), and one writer thread per cluster that adds a memory
at a time through redis.cluster.RedisCluster (which follows MOVED, retries
TRYAGAIN and rediscovers the cluster on a connection error). Each round
signals the shard's leader, measures

  gap:   from the signal to the acknowledgement of the first write sent
         after it (what a client waits for before it can write again),
  stall: the longest single write call in the round (redis-py's own
         retries included),
  errors: exceptions the client library raised to the application,
  exit:  from SIGTERM to the old leader's exit (shutdown time),

then restarts the stopped node with its command line and waits until it
follows again. Each round signals every cluster in turn (in the order
given), with SIGTERM and SIGKILL rounds alternating, so that the machine's
noise falls on all of them alike (the order within a round is fixed: a
later cluster's round follows an earlier one's restart). Prints each round
and the median and max per (binary, signal).

Usage: scripts/cluster_failover.py [--rounds 10] [--port 7300] BIN [BIN...]
(a label may precede a binary: before=/tmp/memrl-old after=./memrl).
Every process it starts is stopped at the end (memrl cluster stop, then
SIGKILL to what it restarted itself)."""

import argparse
import copy
import logging
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

import redis
import redis.cluster
from redis.cluster import ClusterNode, RedisCluster

# redis-py 4.3.4 (Debian 12's python3-redis) deep-copies its connection
# arguments when it rediscovers the cluster, and one of them is a bound
# method of the client, which holds a lock: the copy fails ("cannot pickle
# '_thread.lock'"), so a client whose node died never finds the new leader
# (redis/redis-py issue 2480, fixed in 4.4 by pull request 2377). A
# shallow copy of that dict is what later versions do.
if redis.__version__.startswith("4.3."):
    class _ShallowDictCopy:
        @staticmethod
        def deepcopy(x, memo=None):
            return dict(x) if isinstance(x, dict) else copy.deepcopy(x, memo)
    redis.cluster.copy = _ShallowDictCopy


def read_nodes(d):
    """nodes.tsv as [(id, host, port, pid)]."""
    out = []
    with open(os.path.join(d, "nodes.tsv")) as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            nid, addr, _shard, pid = line.rstrip("\n").split("\t")[:4]
            host, port = addr.rsplit(":", 1)
            out.append((nid, host, int(port), int(pid)))
    return out


def alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False


class Cluster:
    def __init__(self, label, binary, port, base):
        self.label, self.binary = label, binary
        self.dir = os.path.join(base, label)
        self.nodes, self.thread, self.rc = {}, None, None
        try:
            self.start(port)
        except BaseException:
            self.close()
            raise

    def start(self, port):
        subprocess.run([self.binary, "cluster", "start", "--dir", self.dir, "--shards", "1", "--replicas", "3",
                        "--port", str(port)], check=True, stdout=subprocess.DEVNULL)
        # id -> dict(host, port, pid, cmdline, popen)
        for nid, host, p, pid in read_nodes(self.dir):
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmdline = [a.decode() for a in f.read().split(b"\0") if a]
            self.nodes[nid] = dict(host=host, port=p, pid=pid, cmdline=cmdline, popen=None)
        self.rc = RedisCluster(startup_nodes=[ClusterNode(n["host"], n["port"]) for n in self.nodes.values()],
                               socket_timeout=5, socket_connect_timeout=1)
        self.rc.execute_command("MEM.CREATE", "k", "DIM", 2)
        self.acks = []    # (sent, acked) monotonic times
        self.errors = []  # (time, message)
        self.stop = False
        self.thread = threading.Thread(target=self.write, daemon=True)
        self.thread.start()

    def write(self):
        i = 0
        while not self.stop:
            i += 1
            sent = time.monotonic()
            try:
                self.rc.execute_command("MEM.ADD", "k", "VALUES", 2, 1, float(i))
                self.acks.append((sent, time.monotonic()))
            except Exception as e:  # what the application sees
                self.errors.append((time.monotonic(), f"{type(e).__name__}: {e}"[:120]))
                time.sleep(0.01)

    def status(self, nid):
        n = self.nodes[nid]
        try:
            r = redis.Redis(host=n["host"], port=n["port"], socket_timeout=1, decode_responses=True)
            v = r.execute_command("RAFT.STATUS")
            r.close()
            return dict(zip(v[0::2], v[1::2]))
        except Exception:
            return None

    def leader(self, deadline=30):
        end = time.monotonic() + deadline
        while time.monotonic() < end:
            for nid in self.nodes:
                s = self.status(nid)
                if s and s.get("role") == "leader":
                    return nid
            time.sleep(0.02)
        raise RuntimeError(f"{self.label}: no leader")

    def round(self, sig):
        nid = self.leader()
        n = self.nodes[nid]
        t0 = time.monotonic()
        os.kill(n["pid"], sig)
        exit_s = None
        while alive(n["pid"]):
            if time.monotonic() - t0 > 60:
                os.kill(n["pid"], signal.SIGKILL)
            time.sleep(0.005)
        exit_s = time.monotonic() - t0
        if n["popen"] is not None:
            n["popen"].wait()
        end = time.monotonic() + 60
        while time.monotonic() < end and not any(s >= t0 for s, _ in self.acks):
            time.sleep(0.005)
        after = [(s, a) for s, a in self.acks if s >= t0]
        if not after:
            raise RuntimeError(f"{self.label}: no write acknowledged within 60 s of the signal")
        gap = after[0][1] - t0
        window = [a - s for s, a in self.acks if a >= t0 - 0.5 and s <= after[0][1]]
        stall = max(window) if window else 0.0
        errs = [m for t, m in self.errors if t >= t0 and t <= after[0][1] + 0.001]
        # Restart the node and wait until it follows a leader again.
        log = open(os.path.join(self.dir, nid + ".log"), "a")
        p = subprocess.Popen(n["cmdline"], stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        log.close()
        n["pid"], n["popen"] = p.pid, p
        end = time.monotonic() + 60
        while time.monotonic() < end:
            s = self.status(nid)
            if s and s.get("role") == "follower" and s.get("leader_id"):
                break
            time.sleep(0.05)
        else:
            raise RuntimeError(f"{self.label}: {nid} did not rejoin")
        time.sleep(1)  # writes flow again before the next round
        return dict(gap=gap, stall=stall, errors=errs, exit=exit_s if sig == signal.SIGTERM else None, node=nid)

    def close(self):
        self.stop = True
        if self.thread is not None:
            self.thread.join(timeout=10)
        if self.rc is not None:
            self.rc.close()
        subprocess.run([self.binary, "cluster", "stop", "--dir", self.dir], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
        for n in self.nodes.values():
            if n["popen"] is not None and n["popen"].poll() is None:
                n["popen"].kill()
                n["popen"].wait()


def main():
    logging.getLogger("redis.cluster").setLevel(logging.CRITICAL)  # it logs every retried error
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--port", type=int, default=7300)
    ap.add_argument("--keep", action="store_true", help="keep the clusters' folders (logs) at the end")
    ap.add_argument("binaries", nargs="+")
    a = ap.parse_args()
    base = tempfile.mkdtemp(prefix="memrl-failover-")
    clusters = []
    try:
        for i, b in enumerate(a.binaries):
            label, _, path = b.rpartition("=")
            clusters.append(Cluster(label or f"bin{i}", os.path.abspath(path), a.port + 10 * i, base))
        time.sleep(1)
        res = {}
        for r in range(a.rounds):
            for sig in (signal.SIGTERM, signal.SIGKILL):
                for c in clusters:
                    out = c.round(sig)
                    res.setdefault((c.label, sig.name), []).append(out)
                    ex = f" exit {out['exit']*1000:6.0f} ms" if out["exit"] is not None else ""
                    print(f"round {r+1:2d} {c.label:8s} {sig.name:7s} leader {out['node']}: gap {out['gap']*1000:6.0f} ms, "
                          f"stall {out['stall']*1000:6.0f} ms, {len(out['errors'])} errors{ex}"
                          + (f" (first: {out['errors'][0]})" if out["errors"] else ""), flush=True)
        print()
        print(f"{'binary':8s} {'signal':7s} {'n':>3s} {'gap p50':>8s} {'gap max':>8s} {'stall max':>9s} "
              f"{'errors':>6s} {'exit p50':>8s} {'exit max':>8s}")
        for (label, sig), outs in res.items():
            gaps = [o["gap"] * 1000 for o in outs]
            exits = [o["exit"] * 1000 for o in outs if o["exit"] is not None]
            ex = f"{statistics.median(exits):8.0f} {max(exits):8.0f}" if exits else f"{'-':>8s} {'-':>8s}"
            print(f"{label:8s} {sig:7s} {len(outs):3d} {statistics.median(gaps):8.0f} {max(gaps):8.0f} "
                  f"{max(o['stall'] for o in outs)*1000:9.0f} {sum(len(o['errors']) for o in outs):6d} {ex}")
    finally:
        for c in clusters:
            c.close()
        if a.keep:
            print("kept", base)
        else:
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
