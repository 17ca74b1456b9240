"""Where one synchronous path call's time goes, phase by phase: the addon's
``find_id_path_sync`` in headless Godot beside Python clients of the same server, with the
server's own stamps between.

    python bench/sync_latency.py                       # den520d, 200 problems, 3 rounds
    python bench/sync_latency.py --map Boston_0_512 --json out.json

For one map it draws ``bench/godot_astar.py``'s problems, starts ``pathserver serve`` on a
free loopback port with the wall clock stamped where its socket loop receives a request
and hands the reply back (:func:`serve_stamped`), then asks each problem one round trip at
a time, with ``bench/godot/sync_latency.gd`` (see its top) and then from Python. Rows:

- ``godot phases``: the steps of ``find_id_path_sync`` one by one with the addon's own
  classes, each timed, waiting for the reply as the addon does;
- ``godot call``: ``find_id_path_sync`` itself, timed whole, asked in turn with the phases;
- ``wait: ...``: the phases again, waiting another way (spinning on the socket back to
  back, spinning longer between reads, sleeping with ``OS.delay_usec``);
- ``raw ZMTP``: a Python client speaking ZMTP over a plain TCP socket (no libzmq on the
  client side), blocked in ``recv`` until the kernel wakes it; ``raw ZMTP, spin``: the
  same reading a non-blocking socket over and over, as the addon does;
- ``pyzmq``: a pyzmq DEALER (libzmq on both sides);
- ``server alone``: the same bodies answered in this process by the server's pipeline
  (``pathserver.server.handlers.respond``: decode, search, encode), no transport.

The Python clients send the addon's request bodies (``godot_astar.request_bodies``) with
ids of their own. Each figure is a mean over the problems, each problem's from the round in
which its whole call was fastest, so a row's phases add up to its total. The wire's legs
come from wall-clock stamps on both sides of the loopback (one kernel clock): ``to loop``
from the request's write to the server loop's receive, ``loop`` from there to the reply
handed to libzmq, ``from loop`` from there to the reply there to read (Godot) or read
(Python). ``client`` is the client's own time: encode, frame, decode and result for the
phases, the call less the phases' wire for the call.

``--json FILE`` writes the rows, each column in us. Godot as for ``bench/godot_astar.py``.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _movingai as movingai  # noqa: E402
import godot_astar  # noqa: E402

REPO = godot_astar.REPO
PROJECT = godot_astar.PROJECT
CALLS_PREFIX = "calls-json: "
#: Request ids of the Python clients, far from the addon's (bench/godot/sync_latency.gd).
RAW_ID_BASE = 2_000_000
SPIN_ID_BASE = 3_000_000
PYZMQ_ID_BASE = 4_000_000
ROUND_IDS = 10_000
COLUMNS = ("encode", "to loop", "loop", "from loop", "frame", "decode", "result", "client", "total")


# -- the server, stamped -----------------------------------------------------------------


def serve_stamped(maps_dir: str, endpoint: str, stamps_file: str) -> int:
    """``pathserver serve`` with the wall clock taken where its loop receives a request from
    its ROUTER and where it hands the reply back; on exit, one JSON line a message,
    ``[id, "recv" | "send", seconds]``, in ``stamps_file``."""
    import msgpack

    from pathserver.server import loop
    from pathserver.server.app import serve

    stamps = []
    routers = []
    recv_frames, send_frames, bind = loop.recv_frames, loop.send_frames, loop.Server.bind

    def stamped_bind(self):
        endpoint = bind(self)
        routers.append(self._router)
        return endpoint

    def stamped_recv(sock):
        frames = recv_frames(sock)
        if sock is routers[0]:
            stamps.append((frames[-1], "recv", time.time()))
        return frames

    def stamped_send(sock, frames):
        # Before the send: libzmq's I/O thread may write the reply out (and the client read
        # it) before the call returns here.
        if sock is routers[0]:
            stamps.append((frames[-1], "send", time.time()))
        send_frames(sock, frames)

    loop.Server.bind, loop.recv_frames, loop.send_frames = stamped_bind, stamped_recv, stamped_send
    try:
        return serve(maps_dir, endpoint)
    finally:
        with open(stamps_file, "w", encoding="ascii") as out:
            for body, what, at in stamps:
                try:
                    rid = msgpack.unpackb(body, strict_map_key=False).get("id")
                except Exception:  # noqa: BLE001 - a stamp without an id is of no use here
                    continue
                out.write(json.dumps([rid, what, at]) + "\n")


def start_stamped(maps_dir: Path, stamps_file: Path) -> tuple[subprocess.Popen, str]:
    endpoint = f"tcp://127.0.0.1:{godot_astar.free_port()}"
    server = subprocess.Popen([sys.executable, __file__, "--serve-stamped", str(maps_dir), endpoint, str(stamps_file)],
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                              env={**os.environ, "PYTHONPATH": str(REPO)})
    ready = threading.Event()

    def read() -> None:
        for line in server.stdout:
            if line.startswith(godot_astar.READY_PREFIX):
                ready.set()

    threading.Thread(target=read, daemon=True).start()
    if not ready.wait(godot_astar.SERVER_START_TIMEOUT_S):
        godot_astar.stop_server(server)
        raise SystemExit("the stamped server did not print its ready line")
    return server, endpoint


# -- Python clients ----------------------------------------------------------------------


class RawZmtp:
    """A DEALER in a few lines of Python over a plain TCP socket (ZMTP 3, NULL mechanism,
    docs/ENGINE-NOTES.md's bytes): what the addon does, without GDScript."""

    def __init__(self, endpoint: str, spin: bool):
        host, port = endpoint[len("tcp://"):].rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buffer = b""
        self.sock.sendall(b"\xff" + bytes(8) + b"\x7f\x03\x00NULL" + bytes(48))
        self._fill(64)
        self.buffer = self.buffer[64:]
        ready = b"\x05READY\x0bSocket-Type\x00\x00\x00\x06DEALER"
        self.sock.sendall(bytes([4, len(ready)]) + ready)
        flags, _ = self._frame()
        if not flags & 4:
            raise RuntimeError("expected the server's READY")
        self.sock.setblocking(not spin)

    def _fill(self, size: int) -> None:
        while len(self.buffer) < size:
            try:
                got = self.sock.recv(1 << 16)
            except BlockingIOError:
                continue
            if not got:
                raise ConnectionError("the server closed the connection")
            self.buffer += got

    def _frame(self) -> tuple[int, bytes]:
        self._fill(2)
        flags = self.buffer[0]
        if flags & 2:
            self._fill(9)
            header, size = 9, struct.unpack_from(">Q", self.buffer, 1)[0]
        else:
            header, size = 2, self.buffer[1]
        self._fill(header + size)
        frame = self.buffer[header : header + size]
        self.buffer = self.buffer[header + size :]
        return flags, frame

    def ask(self, body: bytes) -> tuple[bytes, float, float]:
        """The reply to ``body``, when it was written and when the reply was read (wall clock)."""
        size = len(body)
        head = bytes([0, size]) if size < 256 else b"\x02" + struct.pack(">Q", size)
        sent = time.time()
        self.sock.sendall(b"\x01\x00" + head + body)
        while True:
            flags, frame = self._frame()
            if not flags & 5:  # the last frame of a message, no command (a PING is one)
                return frame, sent, time.time()

    def close(self) -> None:
        self.sock.close()


class PyzmqDealer:
    def __init__(self, endpoint: str):
        import zmq

        self.sock = zmq.Context.instance().socket(zmq.DEALER)
        self.sock.linger = 0
        self.sock.rcvtimeo = 60_000
        self.sock.connect(endpoint)

    def ask(self, body: bytes) -> tuple[bytes, float, float]:
        sent = time.time()
        self.sock.send_multipart([b"", body])
        reply = self.sock.recv_multipart()[-1]
        return reply, sent, time.time()

    def close(self) -> None:
        self.sock.close()


def with_id(body: bytes, rid: int) -> bytes:
    import msgpack

    request = msgpack.unpackb(body)
    request["id"] = rid
    return msgpack.packb(request)


def python_records(client, bodies: list[bytes], id_base: int, rounds: int) -> list[list[dict]]:
    """One list of records a round: each problem's request id, the wall clock when it was
    written and when its reply was read, and the whole round trip (us)."""
    import msgpack

    reply = msgpack.unpackb(client.ask(with_id(bodies[0], id_base))[0], strict_map_key=False)
    if reply.get("ok") is not True:
        raise SystemExit(f"the server refused a request: {reply.get('error')}")
    out = []
    for r in range(rounds):
        # Ids of their own each round: the server's stamps are matched by id.
        ids = [id_base + (r + 1) * ROUND_IDS + i for i in range(len(bodies))]
        mine = [with_id(body, rid) for body, rid in zip(bodies, ids)]
        records = []
        gc.disable()
        try:
            for rid, body in zip(ids, mine):
                t0 = time.perf_counter()
                _, sent, read = client.ask(body)
                total = (time.perf_counter() - t0) * 1e6
                records.append({"id": rid, "sent_at": sent, "readable_at": read, "total": total})
        finally:
            gc.enable()
        out.append(records)
    return out


# -- the breakdown -----------------------------------------------------------------------


def read_stamps(path: Path) -> dict[int, dict[str, float]]:
    """The server's stamps by request id: the first receive, the last send."""
    stamps: dict[int, dict[str, float]] = {}
    for line in path.read_text(encoding="ascii").splitlines():
        rid, what, at = json.loads(line)
        if isinstance(rid, int):
            entry = stamps.setdefault(rid, {})
            if what == "send" or what not in entry:
                entry[what] = at
    return stamps


def legs(record: dict, stamps: dict, id_key: str = "id") -> dict[str, float] | None:
    """The wire's three legs of one call, in us, or None without both server stamps."""
    server = stamps.get(record[id_key], {})
    if "recv" not in server or "send" not in server:
        return None
    return {"to loop": (server["recv"] - record["sent_at"]) * 1e6,
            "loop": (server["send"] - server["recv"]) * 1e6,
            "from loop": (record["readable_at"] - server["send"]) * 1e6}


def breakdown(rounds: list[list[dict]], stamps: dict, phases: tuple[str, ...], total) -> dict[str, float]:
    """The mean of each column over the problems, each from its fastest round by ``total``."""
    problems = len(rounds[0])
    fastest = [min((r[i] for r in rounds), key=total) for i in range(problems)]
    rows = []
    for record in fastest:
        wire = legs(record, stamps)
        if wire is None:
            continue
        row = {name: float(record[name]) for name in phases}
        row.update(wire)
        row["total"] = float(total(record))
        rows.append(row)
    return {name: sum(row[name] for row in rows) / len(rows) for name in rows[0]} | {"problems": len(rows)}


def godot_rows(rounds: list[dict[str, list[dict]]], stamps: dict) -> dict[str, dict[str, float]]:
    """The Godot run's rows: each way of waiting's phases (the addon's way first, as
    ``godot phases``), then ``godot call``."""
    phases = ("encode", "send", "wait", "frame", "decode", "result")
    rows = {}
    for way in rounds[0]:
        if way == "call":
            continue
        way_rounds = [by_way[way] for by_way in rounds]
        for records in way_rounds:
            for record in records:
                record["sent_at"] /= 1e6
                record["readable_at"] /= 1e6
        row = breakdown(way_rounds, stamps, phases, lambda r: sum(r[p] for p in phases))
        # The wire's legs span the send and the wait: the client's own phases are the others.
        row["client"] = sum(row[p] for p in ("encode", "frame", "decode", "result"))
        rows["godot " + way if way == "phases" else way] = row
    # The whole call has no stamps of its own: its wire is taken to be the phases' (the same
    # problems, asked in turn with it), the rest is the client's.
    calls = [by_way["call"] for by_way in rounds]
    fastest = [min((r[i] for r in calls), key=lambda r: r["call"]) for i in range(len(calls[0]))]
    call_total = sum(r["call"] for r in fastest) / len(fastest)
    stepwise = rows["godot phases"]
    wire = stepwise["to loop"] + stepwise["loop"] + stepwise["from loop"]
    call = {"to loop": stepwise["to loop"], "loop": stepwise["loop"], "from loop": stepwise["from loop"],
            "client": call_total - wire, "total": call_total, "problems": len(fastest)}
    return {"godot phases": stepwise, "godot call": call} | {k: v for k, v in rows.items() if k != "godot phases"}


def python_row(rounds: list[list[dict]], stamps: dict) -> dict[str, float]:
    row = breakdown(rounds, stamps, (), lambda r: r["total"])
    row["client"] = row["total"] - row["to loop"] - row["loop"] - row["from loop"]
    return row


def table(name: str, rows: dict[str, dict[str, float]]) -> list[str]:
    width = max(len(label) for label in rows) + 2
    head = f"{'client':<{width}}" + "".join(f"{c:>10}" for c in COLUMNS)
    out = [f"{name}: us a path call, by phase", "", head]
    for label, row in rows.items():
        cells = "".join(f"{row[c]:>10.1f}" if c in row else f"{'-':>10}" for c in COLUMNS)
        out.append(f"{label:<{width}}{cells}")
    return out


NOTES = [
    "us a path call, each problem's fastest round. encode: the request's bytes; to loop: from the",
    "request's write to the server loop's receive (kernel, libzmq's I/O thread, the loop waking);",
    "loop: from there to the reply handed to libzmq (decode, search, encode); from loop: from there",
    "to the reply there to read (Godot) or read (Python); frame: read and ZMTP frames parsed; decode:",
    "the reply's head read into a PathServerResult (path, status, gen); result: its cells; client:",
    "the client's own time (the call: its whole time less the phases' wire legs). See the top of",
    "bench/sync_latency.py.",
]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    movingai.add_godot_bench_arguments(parser, "den520d", rounds=3, timeout=600, many=False)
    parser.add_argument("--json", type=Path, metavar="FILE", help="write the rows as JSON")
    args = parser.parse_args(argv)

    godot = godot_astar.godot_command()
    if godot is None:
        print("No Godot 4 found: see bench/godot_astar.py.\n\nsync latency: skipped (no Godot 4)")
        return 0
    maps = movingai.find_maps(args.movingai)
    if args.map not in maps:
        print(f"map {args.map} not found under {args.movingai}", file=sys.stderr)
        return 2
    map_path = maps[args.map]
    walkable = movingai.read_walkable(map_path)
    problems = movingai.bucket_spread(movingai.read_scenarios(map_path, walkable), args.queries, args.seed)
    subprocess.run([*godot, "--headless", "--path", str(PROJECT), "--import"], capture_output=True,
                   timeout=godot_astar.IMPORT_TIMEOUT_S, check=True)
    with tempfile.TemporaryDirectory(prefix="pathserver-sync-latency-") as scratch:
        scratch = Path(scratch)
        served = scratch / "maps"
        served.mkdir()
        shutil.copy(map_path, served / map_path.name)
        problems_file = scratch / "problems.txt"
        godot_astar.write_problems(problems_file, map_path, problems)
        bodies = godot_astar.request_bodies(args.map, problems)["paths"]
        stamps_file = scratch / "stamps.jsonl"
        server, endpoint = start_stamped(served, stamps_file)
        try:
            run = subprocess.run(["timeout", str(args.timeout), *godot, "--headless", "--path", str(PROJECT),
                                  "-s", "res://sync_latency.gd", "--", str(problems_file), endpoint, args.map,
                                  str(args.rounds)], capture_output=True, text=True)
            lines = run.stdout.splitlines()
            if not lines or lines[-1] != "sync latency done":
                print(run.stdout[-3000:] + run.stderr[-3000:], file=sys.stderr)
                return 1
            godot_rounds = [json.loads(line[len(CALLS_PREFIX):]) for line in lines if line.startswith(CALLS_PREFIX)]
            python = {}
            for label, make, base in (("raw ZMTP", lambda: RawZmtp(endpoint, spin=False), RAW_ID_BASE),
                                      ("raw ZMTP, spin", lambda: RawZmtp(endpoint, spin=True), SPIN_ID_BASE),
                                      ("pyzmq", lambda: PyzmqDealer(endpoint), PYZMQ_ID_BASE)):
                client = make()
                try:
                    python[label] = python_records(client, bodies, base, args.rounds)
                finally:
                    client.close()
        finally:
            godot_astar.stop_server(server)
        stamps = read_stamps(stamps_file)
        alone = godot_astar.server_times(served, {"paths": bodies}, args.rounds)["paths"]
    rows = godot_rows(godot_rounds, stamps)
    for label, rounds in python.items():
        rows[label] = python_row(rounds, stamps)
    rows["server alone"] = {"loop": alone, "total": alone}
    print("\n".join(table(f"{args.map}, {len(problems)} problems, {args.rounds} rounds", rows)))
    print("\n" + "\n".join(NOTES))
    if args.json:
        args.json.write_text(json.dumps({"map": args.map, "rows": rows}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "--serve-stamped":
        sys.exit(serve_stamped(*sys.argv[2:]))
    sys.exit(main())
