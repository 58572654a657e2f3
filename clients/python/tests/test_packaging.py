"""The package installs offline and works without numpy."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap

PKG = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_pip_install_no_build_isolation(tmp_path):
    # Build from a copy, so pip's in-tree build leaves nothing in the source folder.
    src = tmp_path / "src"
    shutil.copytree(PKG, src, ignore=shutil.ignore_patterns("tests", "__pycache__", "build", "*.egg-info"))
    target = tmp_path / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-build-isolation", "--no-deps", "--no-index",
         "--target", str(target), str(src)],
        check=True, env={**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1", "PIP_ROOT_USER_ACTION": "ignore"},
    )
    out = subprocess.run(
        [sys.executable, "-c", "import memrl, memrl.vecdb; print(memrl.__file__, memrl.__version__)"],
        check=True, capture_output=True, text=True, cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(target)},
    ).stdout
    assert out.startswith(str(target)) and out.split()[1] == "0.1.0"


def test_without_numpy(server, coll):
    code = textwrap.dedent(f"""
        import sys
        sys.modules["numpy"] = None  # import numpy now fails
        sys.path.insert(0, {PKG!r})
        import memrl
        from memrl import _codec
        assert not _codec.HAVE_NUMPY
        m = memrl.Client(port={server.port})
        m.create({coll!r}, 2, metric="L2")
        i = m.add({coll!r}, (0.5, -0.25))
        assert m.get({coll!r}, i, with_vector=True).vector == [0.5, -0.25]
        assert m.retrieve({coll!r}, [0.5, -0.25])[0].id == i
        print("ok")
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.stdout.strip() == "ok", out.stderr
