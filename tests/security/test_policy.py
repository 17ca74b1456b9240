"""The bind policy: loopback is free, anything else needs CURVE or an explicit --insecure.

Refusal is tested through the policy function, ``serve()`` and the CLI's exit code; no
test ever binds a non-loopback interface (``Server.bind`` is stubbed where one would)."""

import argparse
import os
import subprocess
import sys

import pytest
import zmq

from pathserver import security
from pathserver.security import BindRefusedError, check_bind, is_local_endpoint
from pathserver.server import app, loop

LOCAL = [
    "tcp://127.0.0.1:5555", "tcp://127.8.9.10:0", "tcp://localhost:5555", "tcp://LOCALHOST:1",
    "tcp://[::1]:5555", "tcp://[::ffff:127.0.0.1]:5555", "ipc:///tmp/pathserver.sock", "inproc://x",
    "ws://127.0.0.1:8080/path",
]
EXPOSED = [
    "tcp://*:5555", "tcp://0.0.0.0:5555", "tcp://[::]:5555", "tcp://192.168.1.20:5555", "tcp://10.0.0.1:0",
    "tcp://eth0:5555", "tcp://lo:5555", "tcp://example.com:5555", "tcp://[fe80::1%eth0]:5555",
    "tcp://[::ffff:10.0.0.1]:5555", "ws://0.0.0.0:8080", "pgm://eth0;239.192.1.1:5555", "tcp:5555", "",
]


@pytest.mark.parametrize("endpoint", LOCAL)
def test_loopback_and_local_transports_are_local(endpoint):
    assert is_local_endpoint(endpoint)
    assert check_bind(endpoint, curve=False) == []


@pytest.mark.parametrize("endpoint", EXPOSED)
def test_everything_else_is_refused_without_curve(endpoint):
    assert not is_local_endpoint(endpoint)
    with pytest.raises(BindRefusedError) as refused:
        check_bind(endpoint, curve=False)
    message = str(refused.value)
    assert "\n" not in message
    assert "--curve-keys" in message and "--insecure" in message
    assert refused.value.code == "bind_refused"


def test_curve_allows_exposed_bind_without_warning():
    assert check_bind("tcp://0.0.0.0:5555", curve=True) == []


def test_insecure_allows_exposed_bind_with_a_loud_warning():
    warnings = check_bind("tcp://*:5555", curve=False, insecure=True)
    assert len(warnings) == 1
    assert "WARNING" in warnings[0] and "WITHOUT encryption" in warnings[0] and "\n" not in warnings[0]


def test_old_libzmq_is_warned_about_when_exposed(monkeypatch):
    monkeypatch.setattr(zmq, "zmq_version_info", lambda: (4, 3, 2))
    assert any("libzmq" in w for w in check_bind("tcp://0.0.0.0:1", curve=True))
    assert check_bind("tcp://127.0.0.1:1", curve=False) == []


def test_serve_refuses_before_loading_anything(tmp_path, capsys):
    # The maps folder does not exist: had serve() got as far as loading, it would raise.
    assert app.serve(tmp_path / "missing", "tcp://0.0.0.0:0") == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.count("\n") == 1
    assert captured.err.startswith("pathserver: refusing to bind tcp://0.0.0.0:0")


def test_serve_insecure_warns_then_binds(tmp_path, capsys, monkeypatch):
    (tmp_path / "maps").mkdir()

    def no_real_bind(self):
        raise zmq.ZMQError(zmq.EADDRNOTAVAIL, "stubbed: tests never bind a real interface")

    monkeypatch.setattr(loop.Server, "bind", no_real_bind)
    assert app.serve(tmp_path / "maps", "tcp://0.0.0.0:0", insecure=True, watch=False) == 2
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith("pathserver: WARNING: --insecure")
    assert err[-1].startswith("pathserver: cannot bind tcp://0.0.0.0:0")


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"allowed_clients_dir": "."}, "--allow needs --curve-keys"),
        ({"curve_keys": "."}, "--curve-keys needs --allow"),
        ({"curve_keys": "/nonexistent/server.key_secret", "allowed_clients_dir": "."}, "cannot read key file"),
    ],
)
def test_serve_reports_bad_curve_options_in_one_line(tmp_path, capsys, kwargs, message):
    assert app.serve(tmp_path, "tcp://0.0.0.0:0", **kwargs) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_serve_refuses_an_empty_allow_list(tmp_path, capsys, keys):
    empty = tmp_path / "empty"
    empty.mkdir()
    assert app.serve(tmp_path, "tcp://0.0.0.0:0", curve_keys=keys.server.secret_file,
                      allowed_clients_dir=empty) == 2
    assert "no client public keys" in capsys.readouterr().err


def test_a_worker_with_curve_keys_is_pointed_at_the_broker(tmp_path, capsys, keys):
    assert app.serve(tmp_path, curve_keys=keys.server.secret_file, allowed_clients_dir=keys.allowed,
                      connect="tcp://127.0.0.1:5556") == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "pathserver broker" in err


def test_cli_serve_exits_non_zero_on_a_non_loopback_bind(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "pathserver", "serve", "--maps", str(tmp_path), "--bind", "tcp://*:0"],
        capture_output=True, timeout=60, env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    assert result.returncode == 2
    assert result.stdout == b""
    lines = result.stderr.decode().splitlines()
    assert len(lines) == 1 and lines[0].startswith("pathserver: refusing to bind tcp://*:0")


def test_serve_arguments_parse():
    parser = argparse.ArgumentParser()
    security.add_serve_arguments(parser)
    args = parser.parse_args(["--curve-keys", "k/server.key_secret", "--allow", "allowed", "--insecure"])
    assert (str(args.curve_keys), str(args.allow), args.insecure) == ("k/server.key_secret", "allowed", True)
    args = parser.parse_args([])
    assert (args.curve_keys, args.allow, args.insecure) == (None, None, False)
