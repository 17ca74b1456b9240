"""CURVE keys: ``pathserver keygen``, reading key files, the server's side
(:class:`CurveServer`: its keypair and the allow-list, enforced by ``zmq.auth``'s ZAP
handler) and a client's socket options.

Keys are ZeroMQ certificate files, as ``pathserver keygen NAME`` writes them:
``NAME.key`` (public, safe to copy) and ``NAME.key_secret`` (secret).
"""

from __future__ import annotations

import argparse
import logging
import os
import re
from dataclasses import dataclass
from pathlib import Path

import zmq
import zmq.auth
from zmq.utils import z85

from pathserver.security.policy import SecurityError
from pathserver.transport import ZAP_DOMAIN_NAME

_KEY_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$")


# -- key files ---------------------------------------------------------------------------


def _z85_key(value, what: str) -> bytes | None:
    """``value`` as a 40-character Z85 key, or None when it does not look like one."""
    if isinstance(value, str):
        if len(value) != 40 or os.path.exists(value):
            return None
        value = value.encode("ascii", "replace")
    if isinstance(value, (bytes, bytearray)):
        value = bytes(value)
        try:
            if len(value) == 40 and len(z85.decode(value)) == 32:
                return value
        except (ValueError, KeyError, TypeError):
            pass
        raise SecurityError(f"{what}: not a 40-character Z85 CURVE key")
    return None


def _certificate(path: Path, what: str) -> tuple[bytes, bytes | None]:
    try:
        public, secret = zmq.auth.load_certificate(path)
    except (OSError, ValueError) as exc:
        raise SecurityError(f"{what}: cannot read key file {path}: {exc}") from None
    for key in (public, secret):
        if key is not None:
            _z85_key(key, f"{what} ({path})")
    return public, secret


def load_public_key(source, what: str = "server public key") -> bytes:
    """A public key (Z85 bytes) from a 40-character Z85 string/bytes or a key file path
    (``NAME.key``; a ``NAME.key_secret`` works too, its public half is used)."""
    key = _z85_key(source, what)
    if key is not None:
        return key
    public, _secret = _certificate(Path(source), what)
    return public


def load_secret_key(source, what: str = "secret key") -> tuple[bytes, bytes]:
    """``(public, secret)`` Z85 keys from a ``NAME.key_secret`` file, a folder holding
    exactly one ``*.key_secret`` (or a ``server.key_secret``), or a 40-character Z85
    secret key (the public half is derived)."""
    key = _z85_key(source, what)
    if key is not None:
        return zmq.curve_public(key), key
    path = Path(source)
    if path.is_dir():
        candidates = sorted(path.glob("*.key_secret"))
        server = path / "server.key_secret"
        if server in candidates:
            candidates = [server]
        if len(candidates) != 1:
            found = ", ".join(p.name for p in candidates) or "none"
            raise SecurityError(
                f"{what}: expected one NAME.key_secret in {path} (found: {found}); name the file instead"
            )
        path = candidates[0]
    public, secret = _certificate(path, what)
    if secret is None:
        raise SecurityError(f"{what}: {path} holds only a public key; give the NAME.key_secret file")
    return public, secret


def allowed_client_keys(folder) -> list[bytes]:
    """The public keys of every ``*.key`` file in ``folder`` (what ``zmq.auth`` will load)."""
    path = Path(folder)
    if not path.is_dir():
        raise SecurityError(f"allow-list: {path} is not a folder of client public keys (NAME.key files)")
    keys = [_certificate(p, "allow-list")[0] for p in sorted(path.glob("*.key"))]
    if not keys:
        raise SecurityError(
            f"allow-list: no client public keys (NAME.key) in {path}; copy each client's NAME.key there "
            "(`pathserver keygen NAME` makes them)"
        )
    return keys


@dataclass(frozen=True)
class CurveServer:
    """The server side of CURVE: its own keypair and the folder of allowed client keys.

    :meth:`start_authenticator` must run on the socket's context before the socket binds;
    :meth:`apply` sets the socket's options. The allow-list is read at start: restart the
    server after adding or removing a key.
    """

    public_key: bytes
    secret_key: bytes
    allowed_dir: Path
    allowed_count: int

    @classmethod
    def load(cls, secret_key_source, allowed_dir) -> "CurveServer":
        if allowed_dir is None:
            raise SecurityError("--curve-keys needs --allow DIR: a folder of the client public keys to admit")
        public, secret = load_secret_key(secret_key_source, "server secret key")
        keys = allowed_client_keys(allowed_dir)
        if not zmq.has("curve"):
            raise SecurityError(f"this libzmq ({zmq.zmq_version()}) was built without CURVE support")
        # Resolved: zmq.auth reads the location "*" as "allow any client".
        return cls(public, secret, Path(allowed_dir).resolve(), len(keys))

    def start_authenticator(self, context: zmq.Context):
        """Start the ZAP handler on ``context``; returns it (call ``.stop()`` before term)."""
        from zmq.auth.thread import ThreadAuthenticator

        authenticator = ThreadAuthenticator(context, log=logging.getLogger("pathserver.security.zap"))
        authenticator.start()
        # zmq.auth falls back to the "*" domain only for sockets that set no ZAP domain;
        # every bound socket sets ZAP_DOMAIN_NAME (pathserver.transport.bind_socket), so the
        # allow-list is registered under both.
        for domain in ("*", ZAP_DOMAIN_NAME):
            authenticator.configure_curve(domain=domain, location=str(self.allowed_dir))
        return authenticator

    def apply(self, socket: zmq.Socket) -> None:
        socket.curve_server = True
        socket.curve_publickey = self.public_key
        socket.curve_secretkey = self.secret_key


def client_curve_options(server_public_key=None, client_secret_key=None) -> dict:
    """Socket options for a CURVE client, ``{}`` when neither key is given.

    ``server_public_key``: the server's ``NAME.key`` file or Z85 key. ``client_secret_key``:
    this client's ``NAME.key_secret`` file (or Z85 secret); its ``NAME.key`` must be in the
    server's allow-list folder.
    """
    if server_public_key is None and client_secret_key is None:
        return {}
    if server_public_key is None or client_secret_key is None:
        raise SecurityError(
            "CURVE needs both server_public_key (the server's NAME.key) and client_secret_key "
            "(this client's NAME.key_secret, whose NAME.key is in the server's allow-list)"
        )
    server = load_public_key(server_public_key, "server public key")
    public, secret = load_secret_key(client_secret_key, "client secret key")
    return {zmq.CURVE_SERVERKEY: server, zmq.CURVE_PUBLICKEY: public, zmq.CURVE_SECRETKEY: secret}


# -- pathserver keygen -------------------------------------------------------------------


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``pathserver keygen NAME [--dir DIR]``."""
    parser.add_argument("name", metavar="NAME", help="key name: writes NAME.key (public) and NAME.key_secret")
    parser.add_argument("--dir", type=Path, default=Path("."), help="folder to write to (default: current)")


def run(args) -> int:
    """Write a CURVE keypair and say how to use it."""
    name, folder = args.name, Path(args.dir)
    if not _KEY_NAME.match(name):
        raise SecurityError(f"key name {name!r}: use letters, digits, '_', '-', '.' (no paths)")
    public, secret = folder / f"{name}.key", folder / f"{name}.key_secret"
    existing = [str(p) for p in (public, secret) if p.exists()]
    if existing:
        raise SecurityError(f"{', '.join(existing)} already exists; remove it or pick another NAME")
    folder.mkdir(parents=True, exist_ok=True)
    umask = os.umask(0o077)  # the secret is never readable by others, not even briefly
    try:
        zmq.auth.create_certificates(folder, name)
    finally:
        os.umask(umask)
    public.chmod(0o644)
    print(
        f"wrote {public} (public key: give it out) and {secret} (secret key: keep it private)\n"
        "\n"
        "As the server's key:\n"
        f"  pathserver serve --bind tcp://0.0.0.0:5555 --curve-keys {secret} --allow ALLOWED_DIR\n"
        f"  Clients need {public} to know the server is genuine.\n"
        "\n"
        "As a client's key:\n"
        f"  copy {public} into the server's ALLOWED_DIR (the --allow folder), restart the server, then\n"
        f"  Python:  Client('tcp://SERVER:5555', server_public_key='server.key', client_secret_key='{secret}')\n"
        f"  engines: pathserver relay --listen tcp://127.0.0.1:5555 --connect tcp://SERVER:5555 "
        f"--server-key server.key --client-key {secret}"
    )
    return 0


# -- serve's and broker's CURVE options -------------------------------------------------


def add_curve_arguments(parser: argparse.ArgumentParser) -> None:
    """``--curve-keys KEY --allow DIR`` (``pathserver serve`` and ``pathserver broker``)."""
    parser.add_argument(
        "--curve-keys", type=Path, default=None, metavar="KEY",
        help="enable CURVE: the server's NAME.key_secret (from `pathserver keygen`) or the folder holding it",
    )
    parser.add_argument(
        "--allow", type=Path, default=None, metavar="DIR",
        help="with --curve-keys: folder of the client public keys (NAME.key) allowed to connect",
    )


def curve_from_arguments(curve_keys, allowed_dir) -> "CurveServer | None":
    """The CurveServer ``--curve-keys`` / ``--allow`` ask for, None when neither is given;
    raises SecurityError naming what is wrong."""
    if curve_keys is None and allowed_dir is None:
        return None
    if curve_keys is None:
        raise SecurityError("--allow needs --curve-keys KEY: the server's NAME.key_secret")
    return CurveServer.load(curve_keys, allowed_dir)


def add_serve_arguments(parser: argparse.ArgumentParser) -> None:
    """The security options of ``pathserver serve``."""
    add_curve_arguments(parser)
    parser.add_argument(
        "--insecure", action="store_true",
        help="allow a non-loopback --bind without CURVE: anyone who can reach the port can use and edit maps",
    )
