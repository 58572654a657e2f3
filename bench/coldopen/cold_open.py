#!/usr/bin/python3
"""Cold open: a user's restart of `memrl serve` on a 1M-memory data folder
whose files are not in the page cache (issue 13).

    /usr/bin/python3 bench/coldopen/cold_open.py --bin ./memrl --dir DATA \
        --query query.bvecs --gt groundtruth.ivecs [--collection sift] \
        [--cold drop|copy|none] [--first 100] [--warm 2000] [--port 6417] [--json FILE]

DATA is a `memrl serve` data folder holding a collection whose memory ids
are the base set's rows (what `memrl bench serverann --dir D` leaves in
D/data). It is never written: the server runs on DATA itself only with
--cold drop, after a clean stop writes nothing new (the folder's own
checkpoint is taken at the stop).

--cold drop (default): `sync; echo 3 > /proc/sys/vm/drop_caches`, so that
every file of the folder (and of the binary) is read from the disk again.
--cold copy: the folder is copied with O_DIRECT writes (dd oflag=direct) to
DATA.cold-copy and the server runs on the copy, so the copy's pages are not
cached (for a container where drop_caches is refused). --cold none: warm
restart, for comparison. The folder's bytes in the page cache just before
the start (util-linux fincore) are reported as cached_bytes_before_start.

Then it starts `BIN serve --dir DATA --addr 127.0.0.1:PORT --sync none`
and measures, from the moment the process is started:
  - listening: the first successful TCP connect (polled every 2 ms);
  - first answer: the reply to the first MEM.RETRIEVE (sent as soon as the
    connect succeeds);
  - the latency of the first --first queries, one at a time on one
    connection (cold: index lists, vector rows and payloads come from the
    disk as they are touched);
  - then --warm queries to warm the caches, and the same first --first
    queries again (warm), with their recall@10 against --gt.
At the first answer it also records the server's CPU seconds, major page
faults and bytes read from the disk (/proc/PID/stat, /proc/PID/io), which
the machine's load does not change. The client is a minimal RESP writer/reader over a socket, the same for the
cold and warm passes, so its own cost (a few µs) is in both.
"""
import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pyshared"))
from texmex import read_vecs  # noqa: E402


class Conn:
    """One RESP2 connection: commands out, replies parsed."""

    def __init__(self, sock):
        self.s = sock
        self.f = sock.makefile("rb")

    def call(self, *args):
        out = [b"*%d\r\n" % len(args)]
        for a in args:
            if isinstance(a, str):
                a = a.encode()
            out.append(b"$%d\r\n%s\r\n" % (len(a), a))
        self.s.sendall(b"".join(out))
        return self.read()

    def read(self):
        line = self.f.readline()
        t, rest = line[:1], line[1:-2]
        if t == b"+":
            return rest.decode()
        if t == b"-":
            raise RuntimeError(rest.decode())
        if t == b":":
            return int(rest)
        if t == b"$":
            n = int(rest)
            if n < 0:
                return None
            b = self.f.read(n + 2)
            return b[:-2]
        if t == b"*":
            n = int(rest)
            return None if n < 0 else [self.read() for _ in range(n)]
        raise RuntimeError(f"bad reply line {line!r}")


def retrieve_ids(conn, coll, q):
    """MEM.RETRIEVE coll FP32 q K1 10 K2 10 LAMBDA 0: the ids, best first."""
    rep = conn.call("MEM.RETRIEVE", coll, "FP32", q.astype("<f4").tobytes(), "K1", "10", "K2", "10",
                    "LAMBDA", "0")
    ids = []
    for item in rep:
        # Each hit is an array whose first element is the id (see docs/PROTOCOL.md).
        first = item[0] if isinstance(item, list) else item
        ids.append(int(first))
    return ids


def drop_caches():
    subprocess.run(["sync"], check=True)
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("3\n")


def direct_copy(src, dst):
    """Copies the folder src to dst writing with O_DIRECT where possible,
    so the copy's pages are not left in the page cache."""
    if os.path.exists(dst):
        shutil.rmtree(dst)
    for root, dirs, files in os.walk(src):
        rel = os.path.relpath(root, src)
        os.makedirs(os.path.join(dst, rel), exist_ok=True)
        for name in files:
            s, d = os.path.join(root, name), os.path.join(dst, rel, name)
            r = subprocess.run(["dd", f"if={s}", f"of={d}", "bs=4M", "oflag=direct", "status=none"])
            if r.returncode != 0:  # a size O_DIRECT refuses at the tail: plain copy
                shutil.copyfile(s, d)
            size = os.path.getsize(s)
            if os.path.getsize(d) > size:
                os.truncate(d, size)
            fd = os.open(d, os.O_RDONLY)
            os.fsync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            os.close(fd)


def summarize(lat_s):
    a = np.sort(np.asarray(lat_s)) * 1e6
    n = len(a)
    return {"n": n, "mean_us": float(a.mean()), "p50_us": float(a[n // 2]),
            "p99_us": float(a[min(n - 1, n * 99 // 100)]), "max_us": float(a[-1])}


def recall10(ids_list, gt):
    return float(np.mean([len(set(ids[:10]) & set(gt[i, :10].tolist())) / 10 for i, ids in enumerate(ids_list)]))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", required=True)
    ap.add_argument("--dir", required=True)
    ap.add_argument("--query", required=True)
    ap.add_argument("--gt", required=True)
    ap.add_argument("--collection", default="sift")
    ap.add_argument("--cold", choices=["drop", "copy", "none"], default="drop")
    ap.add_argument("--first", type=int, default=100)
    ap.add_argument("--warm", type=int, default=2000)
    ap.add_argument("--port", type=int, default=6417)
    ap.add_argument("--json")
    a = ap.parse_args()

    nq = a.warm + a.first
    xq = read_vecs(a.query, nq)
    gt = read_vecs(a.gt, nq)
    datadir = a.dir
    if a.cold == "copy":
        datadir = a.dir.rstrip("/") + ".cold-copy"
        direct_copy(a.dir, datadir)
    elif a.cold == "drop":
        drop_caches()
    du = sum(os.path.getsize(os.path.join(r, f)) for r, _, fs in os.walk(datadir) for f in fs)
    cached = cached_bytes(datadir)

    addr = ("127.0.0.1", a.port)
    log = open(os.path.join(os.path.dirname(os.path.abspath(datadir)), "cold_open_server.log"), "ab")
    t0 = time.perf_counter()
    proc = subprocess.Popen([a.bin, "serve", "--dir", datadir, "--addr", f"{addr[0]}:{addr[1]}", "--sync", "none"],
                            stdout=log, stderr=log)
    try:
        sock = None
        while sock is None:
            if proc.poll() is not None:
                sys.exit(f"memrl serve exited with {proc.returncode}; see cold_open_server.log")
            try:
                sock = socket.create_connection(addr, timeout=600)
            except OSError:
                time.sleep(0.002)
        t_listen = time.perf_counter() - t0
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        conn = Conn(sock)
        cold_lat, cold_ids = [], []
        for i in range(a.first):
            ts = time.perf_counter()
            cold_ids.append(retrieve_ids(conn, a.collection, xq[i]))
            cold_lat.append(time.perf_counter() - ts)
            if i == 0:
                t_first = time.perf_counter() - t0
                at_first = proc_usage(proc.pid)
        t_first100 = time.perf_counter() - t0
        rss_after_first = rss_kb(proc.pid)
        for i in range(a.first, nq):
            retrieve_ids(conn, a.collection, xq[i])
        warm_lat, warm_ids = [], []
        for i in range(a.first):
            ts = time.perf_counter()
            warm_ids.append(retrieve_ids(conn, a.collection, xq[i]))
            warm_lat.append(time.perf_counter() - ts)
        info = conn.call("MEM.INFO", a.collection)
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=300)
    res = {
        "cold": a.cold, "dir": datadir, "folder_bytes": du, "cached_bytes_before_start": cached,
        "listening_ms": t_listen * 1e3, "first_answer_ms": t_first * 1e3,
        "first_n_done_ms": t_first100 * 1e3, "rss_kb_after_first_n": rss_after_first,
        "server_at_first_answer": at_first,
        "first_n_cold": summarize(cold_lat), "first_n_warm": summarize(warm_lat),
        "recall10_cold": recall10(cold_ids, gt), "recall10_warm": recall10(warm_ids, gt),
        "first_query_us": cold_lat[0] * 1e6,
        "info": [x.decode() if isinstance(x, bytes) else x for x in info] if isinstance(info, list) else str(info),
    }
    print(json.dumps(res, indent=1))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=1)
    if a.cold == "copy":
        shutil.rmtree(datadir)


def cached_bytes(folder):
    """Bytes of the folder's files in the page cache (util-linux fincore),
    or -1 if fincore is missing."""
    files = [os.path.join(r, f) for r, _, fs in os.walk(folder) for f in fs]
    try:
        out = subprocess.run(["fincore", "-b", "-n", "-o", "RES"] + files, capture_output=True, text=True,
                             check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return -1
    return sum(int(x) for x in out.split())


def proc_usage(pid):
    """The server's CPU seconds (user, system), major page faults and bytes
    read from the disk so far (/proc/PID/stat and io): facts about the open
    that the machine's load does not change, unlike its wall time."""
    out = {}
    try:
        with open(f"/proc/{pid}/stat") as f:
            st = f.read().rsplit(")", 1)[1].split()
        tick = os.sysconf("SC_CLK_TCK")
        out.update(user_s=int(st[11]) / tick, system_s=int(st[12]) / tick, major_faults=int(st[9]))
        with open(f"/proc/{pid}/io") as f:
            for line in f:
                k, v = line.split(":")
                if k == "read_bytes":
                    out["disk_read_bytes"] = int(v)
    except OSError:
        pass
    return out


def rss_kb(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


if __name__ == "__main__":
    main()
