"""Authentication and permissions map to AuthError and NoPermission (a server with passwords)."""

from __future__ import annotations

import pytest

import memrl
from conftest import Server


@pytest.fixture(scope="module")
def secured(binary, tmp_path_factory):
    tmp = str(tmp_path_factory.mktemp("auth"))
    s = Server(binary, tmp, extra=["--requirepass", "s3cret", "--user", "ro:ropass:readonly"], password="s3cret")
    s.start()
    yield s
    s.stop()


def test_noauth_and_wrongpass(secured):
    with pytest.raises(memrl.AuthError) as e:
        memrl.Client(port=secured.port).list()
    assert e.value.kind == "NOAUTH"
    with pytest.raises(memrl.AuthError) as e:
        memrl.Client(port=secured.port, password="wrong").list()
    assert e.value.kind == "WRONGPASS"


def test_readonly_user_gets_nopermission(secured):
    admin = memrl.Client(port=secured.port, password="s3cret")
    admin.create("authcoll", 2)
    admin.add("authcoll", [1, 0])
    ro = memrl.Client(port=secured.port, username="ro", password="ropass")
    assert len(ro.retrieve("authcoll", [1, 0])) == 1
    with pytest.raises(memrl.NoPermission) as e:
        ro.add("authcoll", [0, 1])
    assert e.value.kind == "NOPERM" and "mem.add" in str(e.value)
    assert admin.info("authcoll").count == 1
