"""Safe network exposure: the bind policy, CURVE keys, the client allow-list, a relay.

::

    policy.py   which endpoints are local; refusing the others without CURVE or --insecure
    keys.py     CURVE: key files and `pathserver keygen`, the server's CurveServer (keypair
                and allow-list, enforced by zmq.auth's ZAP handler), a client's options
    relay.py    `pathserver relay`: plain ZeroMQ for engines on loopback, CURVE to the server

The server binds loopback by default; any other address needs CURVE or ``--insecure``
(docs/security.md). The socket options themselves (ZAP domain, CURVE server or client,
heartbeats) are set in ``pathserver.transport``.

Errors::

    PathserverError
     +-- SecurityError          code = "security"       bad key file, bad allow-list folder
          +-- BindRefusedError  code = "bind_refused"   non-loopback bind without CURVE or --insecure
"""

from pathserver.security.keys import (
    CurveServer,
    add_arguments,
    add_curve_arguments,
    add_serve_arguments,
    allowed_client_keys,
    client_curve_options,
    curve_from_arguments,
    load_public_key,
    load_secret_key,
    run,
)
from pathserver.security.policy import SAFE_LIBZMQ, BindRefusedError, SecurityError, check_bind, is_local_endpoint
from pathserver.security.relay import RELAY_IDLE_S, RELAY_MAX_PEERS, Relay, add_relay_arguments, run_relay
from pathserver.transport import ZAP_DOMAIN_NAME

__all__ = [
    "RELAY_IDLE_S",
    "RELAY_MAX_PEERS",
    "SAFE_LIBZMQ",
    "ZAP_DOMAIN_NAME",
    "BindRefusedError",
    "CurveServer",
    "Relay",
    "SecurityError",
    "add_arguments",
    "add_curve_arguments",
    "add_relay_arguments",
    "add_serve_arguments",
    "allowed_client_keys",
    "check_bind",
    "client_curve_options",
    "curve_from_arguments",
    "is_local_endpoint",
    "load_public_key",
    "load_secret_key",
    "run",
    "run_relay",
]
