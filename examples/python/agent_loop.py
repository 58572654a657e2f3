#!/usr/bin/env python3
"""A MemRL-style agent loop on memrl: retrieve, act, reward, remember.

The agent meets tasks from a few families. Each family has one action (its
"recipe") that solves it; the agent does not know which. For each task it:

1. **retrieves** memories of past tasks from the server (MEM.RETRIEVE: the K1
   most similar with similarity ≥ --delta, the best K2 by
   (1-λ)·z(sim) + λ·z(Q)),
2. drops those whose Q is below the **Q floor** (--q-floor, MemRL's
   q_min_threshold), then **selects** one ε-greedily (--epsilon: a random
   candidate, else the best), or, with no candidate left, explores a random
   action,
3. **acts** (simulated: success iff the action is the family's recipe; with
   --noise, a right action still fails sometimes),
4. **rewards** the memory it followed (MEM.REWARD +1 on success, -1 on
   failure: Q ← Q + α(r − Q) on the server), and
5. **remembers** a success (MEM.ADD of the task's intent with the action as
   payload and attributes), unless the memory it followed is almost the same
   task (similarity ≥ --novelty): that one already says what to do.

The environment is built so that similarity alone misleads: every family
starts with **distractors**, memories very close to its tasks that hold a
wrong action (as a plausible-looking but bad past plan would be). Ranking by
similarity alone (λ=0) keeps following them; with λ>0 their Q falls after
failures and the right memories, a little farther away, win.

Usage (a server must be running, or starting: it is waited for up to --wait
seconds; `go run ./cmd/memrl serve` serves 127.0.0.1:6390), with the venv the
README makes (the memrl package installed, Debian's redis-py and numpy seen):

    .venv/bin/python examples/python/agent_loop.py                 # λ=0.5, 8 epochs
    .venv/bin/python examples/python/agent_loop.py --compare       # λ=0 against λ=0.5
    .venv/bin/python examples/python/agent_loop.py --short --check # what CI runs

It imports the installed memrl package, or else the one in this checkout
(clients/python); either needs redis-py.

It prints the success rate per epoch. With --check it exits 1 unless the last
epoch beats the first (and, with --compare, λ=0.5's last epoch beats λ=0's).
It uses a collection of its own (--collection, dropped first and at the end).
"""

from __future__ import annotations

import argparse
import math
import os
import random
import sys
import time
from dataclasses import dataclass

try:
    import memrl
except ModuleNotFoundError as e:
    if e.name != "memrl":
        raise
    # Not installed: the package in this checkout.
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "clients", "python"))
    try:
        import memrl
    except ModuleNotFoundError as e2:
        if e2.name != "redis":
            raise
        sys.exit(f"agent_loop.py: memrl needs redis-py, which {sys.executable} lacks. On Debian 12:\n"
                 "  sudo apt-get install -y python3-venv python3-wheel python3-redis python3-numpy\n"
                 "  /usr/bin/python3 -m venv --system-site-packages .venv\n"
                 "  .venv/bin/pip install --no-build-isolation --no-index ./clients/python\n"
                 "  .venv/bin/python examples/python/agent_loop.py")


@dataclass
class Task:
    family: int
    intent: list[float]


def _unit(v: list[float]) -> list[float]:
    n = math.sqrt(sum(x * x for x in v)) or 1.0
    return [x / n for x in v]


class Environment:
    """Task families around random centres; one right action each."""

    def __init__(self, rng: random.Random, families: int, actions: int, dim: int, spread: float, noise: float):
        self.rng = rng
        self.dim = dim
        self.spread = spread
        self.noise = noise
        self.actions = actions
        self.centres = [_unit([rng.gauss(0, 1) for _ in range(dim)]) for _ in range(families)]
        self.recipe = [rng.randrange(actions) for _ in range(families)]

    def near(self, centre: list[float], spread: float) -> list[float]:
        return _unit([c + self.rng.gauss(0, spread) for c in centre])

    def task(self) -> Task:
        f = self.rng.randrange(len(self.centres))
        return Task(f, self.near(self.centres[f], self.spread))

    def act(self, task: Task, action: int) -> bool:
        return action == self.recipe[task.family] and self.rng.random() >= self.noise


@dataclass
class Config:
    lam: float
    epsilon: float
    q_floor: float
    k1: int
    k2: int
    delta: float
    novelty: float


def seed_distractors(m: memrl.Client, coll: str, env: Environment, per_family: int) -> None:
    """Memories very close to each family's centre that hold a wrong action."""
    batch = []
    for f, centre in enumerate(env.centres):
        for _ in range(per_family):
            wrong = (env.recipe[f] + 1 + env.rng.randrange(env.actions - 1)) % env.actions
            batch.append((env.near(centre, env.spread / 4), wrong))
    with m.pipeline() as p:  # one MULTI/EXEC, one fsync
        for vec, a in batch:
            p.add(coll, vec, payload=str(a), attrs={"action": a, "source": "distractor"})
        p.execute()


def run(m: memrl.Client, coll: str, env: Environment, cfg: Config, epochs: int, tasks: int, rng: random.Random) -> list[float]:
    rates = []
    for epoch in range(1, epochs + 1):
        wins = 0
        for _ in range(tasks):
            task = env.task()
            hits = m.retrieve(coll, task.intent, k1=cfg.k1, k2=cfg.k2, lam=cfg.lam, delta=cfg.delta, with_attrs=True)
            hits = [h for h in hits if h.q >= cfg.q_floor]  # the Q floor
            chosen = None
            if hits:
                chosen = rng.choice(hits) if rng.random() < cfg.epsilon else hits[0]
                action = int(chosen.attrs["action"])
            else:
                action = rng.randrange(env.actions)  # nothing trusted: explore
            ok = env.act(task, action)
            wins += ok
            if chosen is not None:
                m.reward(coll, 1.0 if ok else -1.0, [chosen.id])
            if ok and not (chosen is not None and chosen.sim >= cfg.novelty):
                # A new successful experience (not a near-copy of the memory followed).
                m.add(coll, task.intent, payload=str(action), attrs={"action": action, "source": "experience"})
        rates.append(wins / tasks)
        print(f"  λ={cfg.lam:<4} epoch {epoch:2d}: success {wins:3d}/{tasks} = {wins / tasks:.2f}", flush=True)
    return rates


def episode(m: memrl.Client, coll: str, args: argparse.Namespace, lam: float) -> list[float]:
    rng = random.Random(args.seed)  # the same tasks and choices for every λ
    env = Environment(rng, args.families, args.actions, args.dim, args.spread, args.noise)
    if coll in m.list():
        m.drop(coll)
    m.create(coll, args.dim, alpha=args.alpha, index="FLAT")
    try:
        seed_distractors(m, coll, env, args.distractors)
        cfg = Config(lam, args.epsilon, args.q_floor, args.k1, args.k2, args.delta, args.novelty)
        return run(m, coll, env, cfg, args.epochs, args.tasks, rng)
    finally:
        m.drop(coll)


def wait_for_server(m: memrl.Client, addr: str, seconds: float) -> bool:
    """Whether the server answers PING within ``seconds`` (a `go run … serve &` just started
    may still be compiling)."""
    deadline = time.monotonic() + seconds
    said = False
    while True:
        try:
            return m.ping()
        except memrl.ConnectionFailed as e:
            if time.monotonic() >= deadline:
                print(f"agent_loop.py: no memrl server at {addr} after {seconds:g} s: {e}", file=sys.stderr)
                return False
            if not said:
                print(f"waiting for the memrl server at {addr} …", file=sys.stderr)
                said = True
            time.sleep(0.2)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=6390)
    ap.add_argument("--collection", default="agent_loop_example")
    ap.add_argument("--epochs", type=int, default=8)
    ap.add_argument("--tasks", type=int, default=60, help="tasks per epoch")
    ap.add_argument("--families", type=int, default=12)
    ap.add_argument("--actions", type=int, default=6)
    ap.add_argument("--dim", type=int, default=32)
    ap.add_argument("--spread", type=float, default=0.15, help="task noise around its family's centre")
    ap.add_argument("--distractors", type=int, default=3, help="misleading memories per family")
    ap.add_argument("--noise", type=float, default=0.05, help="chance a right action still fails")
    ap.add_argument("--lam", type=float, default=0.5, help="λ: weight of Q against similarity")
    ap.add_argument("--epsilon", type=float, default=0.1, help="ε-greedy exploration")
    ap.add_argument("--q-floor", type=float, default=-0.5, help="candidates with Q below this are ignored")
    ap.add_argument("--alpha", type=float, default=0.3, help="the collection's learning rate")
    ap.add_argument("--k1", type=int, default=10)
    ap.add_argument("--k2", type=int, default=3)
    ap.add_argument("--delta", type=float, default=0.5, help="similarity threshold of phase 1")
    ap.add_argument("--novelty", type=float, default=0.95, help="don't store a success this similar to the memory followed")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--compare", action="store_true", help="run λ=0 and then --lam, on the same tasks")
    ap.add_argument("--short", action="store_true", help="a quick run (5 epochs of 60 tasks, 8 families), as CI runs it")
    ap.add_argument("--check", action="store_true", help="exit 1 unless learning shows (see above)")
    ap.add_argument("--wait", type=float, default=120, help="seconds to wait for the server to answer")
    args = ap.parse_args()
    if args.short:
        args.epochs, args.tasks, args.families = 5, 60, 8

    m = memrl.Client(args.host, args.port)
    if not wait_for_server(m, f"{args.host}:{args.port}", args.wait):
        return 1
    lams = [0.0, args.lam] if args.compare else [args.lam]
    results = {}
    for lam in lams:
        print(f"λ={lam}: {args.epochs} epochs × {args.tasks} tasks, ε={args.epsilon}, Q floor {args.q_floor}, "
              f"{args.families} families, {args.distractors} distractors each")
        results[lam] = episode(m, args.collection, args, lam)
        print(f"λ={lam}: success per epoch " + " ".join(f"{r:.2f}" for r in results[lam]))
    if args.check:
        last = results[args.lam]
        if last[-1] <= last[0]:
            print(f"check failed: λ={args.lam}'s last epoch ({last[-1]:.2f}) does not beat its first ({last[0]:.2f})")
            return 1
        if args.compare and results[args.lam][-1] <= results[0.0][-1]:
            print(f"check failed: λ={args.lam} ends at {results[args.lam][-1]:.2f}, λ=0 at {results[0.0][-1]:.2f}")
            return 1
        print("check passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
