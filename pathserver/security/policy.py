"""The bind policy: a server, broker or relay binds loopback unless it is secured.

:func:`check_bind` refuses any address another machine could reach unless CURVE is
configured (a server secret key plus a folder of allowed client public keys, see
``pathserver.security.keys``) or the user passed ``--insecure``, which only earns a loud
warning. docs/security.md states the threat model.
"""

from __future__ import annotations

import ipaddress

import zmq

from pathserver.errors import BindRefusedError, SecurityError  # noqa: F401 - part of this module's API

#: Below this libzmq a network-facing socket carries known, fixed advisories
#: (CVE-2019-13132, CVE-2020-15166, CVE-2021-20234..20237, CVE-2020-36400).
SAFE_LIBZMQ = (4, 3, 5)
#: Local transports: never reachable from another machine.
_LOCAL_TRANSPORTS = ("ipc", "inproc")




# -- the bind policy ---------------------------------------------------------------------


def is_local_endpoint(endpoint: str) -> bool:
    """True when ``endpoint`` can only be reached from this machine.

    Local: ``ipc://``, ``inproc://``, and ``tcp://`` (or ``ws://``) on 127.0.0.0/8,
    ``::1`` (also as ``::ffff:127.x.x.x``) or ``localhost``. Everything else is not:
    ``*``, ``0.0.0.0``, ``::``, interface names, host names, other transports.

    >>> [is_local_endpoint(e) for e in ("tcp://127.0.0.1:5555", "tcp://[::1]:0", "ipc:///tmp/p")]
    [True, True, True]
    >>> [is_local_endpoint(e) for e in ("tcp://*:5555", "tcp://0.0.0.0:5555", "tcp://eth0:5555")]
    [False, False, False]
    """
    transport, sep, address = endpoint.partition("://")
    if not sep:
        return False
    transport = transport.lower()
    if transport in _LOCAL_TRANSPORTS:
        return True
    if transport not in ("tcp", "ws"):
        return False
    host = address.split("/", 1)[0]  # ws://host:port/path
    host = host.rsplit(";", 1)[-1]  # a connect-style "source;destination": the destination counts
    host, _, _port = host.rpartition(":")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    host = host.split("%", 1)[0]  # an IPv6 zone id
    if host.lower() == "localhost":
        return True
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return False  # "*", an interface name or a host name: possibly reachable
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_loopback


def check_bind(endpoint: str, *, curve: bool, insecure: bool = False) -> list[str]:
    """Apply the bind policy; returns the warning lines to print on stderr.

    Raises BindRefusedError for a non-loopback ``endpoint`` unless ``curve`` (CURVE with
    an allow-list is configured) or ``insecure``.
    """
    if is_local_endpoint(endpoint):
        return []
    warnings = []
    if not curve:
        if not insecure:
            raise BindRefusedError(
                f"refusing to bind {endpoint}: not a loopback address, and CURVE is not configured; "
                "use --curve-keys KEY --allow DIR (see `pathserver keygen`), or --insecure to expose it anyway"
            )
        warnings.append(
            f"pathserver: WARNING: --insecure: serving {endpoint} WITHOUT encryption or authentication; "
            "anyone who can reach this port can query and edit your maps"
        )
    if zmq.zmq_version_info() < SAFE_LIBZMQ:
        warnings.append(
            f"pathserver: WARNING: libzmq {zmq.zmq_version()} is older than "
            f"{'.'.join(map(str, SAFE_LIBZMQ))} and has known network-facing vulnerabilities; "
            "install pyzmq's wheel (which bundles a current libzmq) or upgrade the system libzmq"
        )
    return warnings
