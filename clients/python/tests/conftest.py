"""Fixtures: a real memrl server for the whole test session.

The server is the binary at $MEMRL_BIN, or cmd/memrl built once with `go build`
into a temp folder. It serves a free loopback port with a temp data folder
(--sync none: these tests are about the client, not durability) and is
stopped at the end. Each test gets its own collection name.

The package tested is the source folder beside these tests, unless
MEMRL_TEST_INSTALLED=1: then it is the one installed for the python running
pytest (scripts/test.sh installs it into a venv as the README says and runs
these tests with that venv's python), and importing the source folder is
an error.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time
import uuid

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.dirname(HERE)
TEST_INSTALLED = os.environ.get("MEMRL_TEST_INSTALLED") == "1"
if not TEST_INSTALLED:
    sys.path.insert(0, SOURCE)  # import memrl from the folder

import memrl  # noqa: E402


def _check_installed() -> None:
    """The installed package must be this checkout's, file for file (not the source folder
    itself, nor a stale install or a build that kept a removed module)."""
    installed = os.path.dirname(os.path.abspath(memrl.__file__))
    source = os.path.join(SOURCE, "memrl")
    if installed == source:
        raise RuntimeError(f"MEMRL_TEST_INSTALLED=1, but memrl was imported from the source folder: {installed}")

    def modules(d: str) -> dict[str, bytes]:
        out = {}
        for name in sorted(os.listdir(d)):
            if name.endswith(".py"):
                with open(os.path.join(d, name), "rb") as f:
                    out[name] = f.read()
        return out

    got, want = modules(installed), modules(source)
    if got != want:
        differ = sorted(n for n in set(got) | set(want) if got.get(n) != want.get(n))
        raise RuntimeError(f"the memrl installed at {installed} is not this checkout's: {differ} differ")


if TEST_INSTALLED:
    _check_installed()

REPO = os.path.abspath(os.path.join(HERE, "..", "..", ".."))


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _binary(tmp: str) -> str:
    path = os.environ.get("MEMRL_BIN")
    if path:
        return path
    path = os.path.join(tmp, "memrl")
    env = dict(os.environ)
    env["PATH"] = "/usr/local/go/bin:" + env.get("PATH", "")
    env.setdefault("GOFLAGS", "-mod=mod")
    subprocess.run(["go", "build", "-o", path, "./cmd/memrl"], cwd=REPO, env=env, check=True)
    return path


class Server:
    def __init__(self, binary: str, tmp: str, extra: list[str] | None = None, password: str | None = None):
        self.binary = binary
        self.extra = extra or []
        self.password = password
        self.dir = os.path.join(tmp, "data")
        self.port = 0
        self.proc: subprocess.Popen | None = None
        self.log = os.path.join(tmp, "server.log")

    def start(self) -> None:
        for _ in range(3):  # the free port can be taken between probe and listen
            self.port = _free_port()
            with open(self.log, "ab") as log:
                self.proc = subprocess.Popen(
                    [self.binary, "serve", "--addr", f"127.0.0.1:{self.port}", "--dir", self.dir, "--sync", "none"] + self.extra,
                    stdout=log, stderr=subprocess.STDOUT,
                )
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and self.proc.poll() is None:
                try:
                    if memrl.Client(port=self.port, socket_timeout=2, password=self.password).ping():
                        return
                except memrl.ConnectionFailed:
                    time.sleep(0.05)
            self.stop()
        with open(self.log) as f:
            raise RuntimeError("memrl serve did not start:\n" + f.read()[-4000:])

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None


@pytest.fixture(scope="session")
def binary(tmp_path_factory):
    return _binary(str(tmp_path_factory.mktemp("bin")))


@pytest.fixture(scope="session")
def server(binary):
    with tempfile.TemporaryDirectory(prefix="memrl-pytest-") as tmp:
        s = Server(binary, tmp)
        s.start()
        try:
            yield s
        finally:
            s.stop()


@pytest.fixture
def client(server):
    c = memrl.Client(port=server.port)
    yield c
    c.close()


@pytest.fixture
def coll(client):
    """A fresh collection name (not created), dropped after the test if it exists."""
    name = "t_" + uuid.uuid4().hex[:12]
    yield name
    if name in client.list():
        client.drop(name)
