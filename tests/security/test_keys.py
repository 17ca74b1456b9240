"""``pathserver keygen`` and key loading: files, Z85 strings, folders, clear errors."""

import argparse
import stat

import pytest
import zmq
import zmq.auth

from pathserver import security
from pathserver.security import SecurityError, client_curve_options, load_public_key, load_secret_key


def keygen(*argv) -> int:
    parser = argparse.ArgumentParser()
    security.add_arguments(parser)
    return security.run(parser.parse_args(list(argv)))


def test_keygen_writes_a_keypair_and_explains_it(tmp_path, capsys):
    assert keygen("alice", "--dir", str(tmp_path / "k")) == 0
    public, secret = tmp_path / "k" / "alice.key", tmp_path / "k" / "alice.key_secret"
    assert stat.S_IMODE(secret.stat().st_mode) == 0o600
    assert stat.S_IMODE(public.stat().st_mode) == 0o644
    pub, sec = zmq.auth.load_certificate(secret)
    assert zmq.auth.load_certificate(public) == (pub, None)
    assert zmq.curve_public(sec) == pub
    out = capsys.readouterr().out
    for expected in ("--curve-keys", "--allow", "server_public_key", "pathserver relay", str(public)):
        assert expected in out


def test_keygen_never_overwrites(tmp_path):
    assert keygen("alice", "--dir", str(tmp_path)) == 0
    before = (tmp_path / "alice.key_secret").read_bytes()
    with pytest.raises(SecurityError, match="already exists"):
        keygen("alice", "--dir", str(tmp_path))
    assert (tmp_path / "alice.key_secret").read_bytes() == before


@pytest.mark.parametrize("name", ["../escape", "a/b", ".hidden", "", "x" * 101])
def test_keygen_refuses_names_that_are_paths(tmp_path, name):
    with pytest.raises(SecurityError, match="key name"):
        keygen(name, "--dir", str(tmp_path))


def test_load_secret_key_from_file_folder_and_z85(keys):
    expected = (keys.server.public, keys.server.secret)
    assert load_secret_key(keys.server.secret_file) == expected
    assert load_secret_key(keys.server.secret.decode()) == expected
    assert load_secret_key(keys.server.secret) == expected
    assert load_secret_key(keys.root) == expected  # several *.key_secret: server.key_secret wins


def test_load_secret_key_errors(tmp_path, keys):
    with pytest.raises(SecurityError, match="only a public key"):
        load_secret_key(keys.server.public_file)
    with pytest.raises(SecurityError, match="expected one NAME.key_secret"):
        load_secret_key(tmp_path)
    with pytest.raises(SecurityError, match="Z85"):
        load_secret_key(b"~" * 40)
    (tmp_path / "junk.key_secret").write_text("not a certificate\n")
    with pytest.raises(SecurityError, match="cannot read"):
        load_secret_key(tmp_path / "junk.key_secret")


def test_load_public_key(keys):
    assert load_public_key(keys.server.public_file) == keys.server.public
    assert load_public_key(keys.server.secret_file) == keys.server.public
    assert load_public_key(keys.server.public.decode()) == keys.server.public


def test_client_options_are_both_or_neither(keys):
    assert client_curve_options() == {}
    options = client_curve_options(keys.server.public_file, keys.alice.secret_file)
    assert options == {zmq.CURVE_SERVERKEY: keys.server.public, zmq.CURVE_PUBLICKEY: keys.alice.public,
                       zmq.CURVE_SECRETKEY: keys.alice.secret}
    with pytest.raises(SecurityError, match="both"):
        client_curve_options(client_secret_key=keys.alice.secret_file)


def test_allow_list_star_is_a_folder_not_allow_any(tmp_path, keys, monkeypatch):
    # zmq.auth reads the location "*" as "any client"; a folder named "*" must not be.
    monkeypatch.chdir(tmp_path)
    (tmp_path / "*").mkdir()
    (tmp_path / "*" / "alice.key").write_bytes(open(keys.alice.public_file, "rb").read())
    curve = security.CurveServer.load(keys.server.secret_file, "*")
    assert str(curve.allowed_dir) != "*" and curve.allowed_dir.is_absolute()
