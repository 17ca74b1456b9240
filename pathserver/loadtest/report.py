"""What a load test did: the drivers' records summed up (:func:`summarize`), as a table
(:func:`format_summary`) and as a plot (:func:`plot`)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from pathserver.loadtest.plan import OP_NAMES, OP_PATH, OP_UPDATE, LoadConfig, LoadTestError

#: Latency percentiles reported, as (JSON key, percentile).
PERCENTILES = (("p50", 50.0), ("p90", 90.0), ("p99", 99.0), ("p999", 99.9))


def _percentiles(values: np.ndarray) -> dict:
    if values.size == 0:
        return {key: None for key, _ in PERCENTILES} | {"max": None, "mean": None}
    found = np.percentile(values, [q for _, q in PERCENTILES])
    out = {key: round(float(v), 3) for (key, _), v in zip(PERCENTILES, found)}
    out["max"] = round(float(values.max()), 3)
    out["mean"] = round(float(values.mean()), 3)
    return out


def summarize(records: list, config: LoadConfig) -> dict:
    """One JSON-ready dict: ``requests``, ``replies``, ``lost``, ``unmatched``,
    ``throughput_rps``, ``latency_ms`` (path requests: p50/p90/p99/p999/max/mean, from when
    each was due), ``errors`` by code, ``statuses`` of path replies, and more."""
    latency = np.concatenate([np.frombuffer(r.latency_ms, dtype=np.float64) for r in records]) if records else np.empty(0)
    done_at = np.concatenate([np.frombuffer(r.done_at, dtype=np.float64) for r in records]) if records else np.empty(0)
    ops = np.concatenate([np.frombuffer(r.op, dtype=np.int8) for r in records]) if records else np.empty(0, np.int8)
    statuses: dict = {}
    errors: dict = {}
    for r in records:
        for name, n in r.statuses.items():
            statuses[name] = statuses.get(name, 0) + n
        for code, n in r.errors.items():
            errors[code] = errors.get(code, 0) + n
    elapsed = float(done_at.max()) if done_at.size else 0.0
    replies = sum(r.answered for r in records)
    paths = ops == OP_PATH
    timeline = []
    if done_at.size:
        seconds = np.floor(done_at).astype(np.int64)
        for second in range(int(seconds.max()) + 1):
            in_second = (seconds == second) & paths
            values = latency[in_second]
            timeline.append({
                "t": second,
                "replies": int(np.count_nonzero(seconds == second)),
                "p50_ms": round(float(np.percentile(values, 50)), 3) if values.size else None,
                "p99_ms": round(float(np.percentile(values, 99)), 3) if values.size else None,
            })
    summary = {
        "endpoint": config.endpoint,
        "mode": "closed_loop" if config.rate is None else "open_loop",
        "clients": config.clients,
        "inflight": config.inflight,
        "target_rps": config.rate,
        "requests": sum(r.sent for r in records),
        "replies": replies,
        "lost": sum(r.lost for r in records),
        "unmatched": sum(r.unmatched for r in records),
        "unmatched_duplicates": sum(r.unmatched_duplicate for r in records),
        "unreadable_replies": sum(r.unreadable for r in records),
        "send_failures": sum(r.send_failures for r in records),
        "duration_s": round(elapsed, 3),
        "throughput_rps": round(replies / elapsed, 1) if elapsed > 0 else 0.0,
        "latency_ms": _percentiles(latency[paths]),
        "statuses": dict(sorted(statuses.items())),
        "errors": dict(sorted(errors.items())),
        "ops": {name: sum(r.sent_by_op[i] for r in records) for i, name in enumerate(OP_NAMES)},
        "max_send_lag_ms": round(max((r.max_lag_ms for r in records), default=0.0), 3),
        "timeline": timeline,
    }
    if np.any(~paths):
        summary["update_latency_ms"] = _percentiles(latency[~paths])
    # Kept out of the JSON (bulky), for --plot.
    summary["_latencies"] = latency[paths]
    return summary


def format_summary(summary: dict) -> str:
    """The summary as a small table for people."""
    lat = summary["latency_ms"]

    def ms(value):
        return "-" if value is None else f"{value:.2f}"

    if summary["mode"] == "open_loop":
        mode = f"open loop at {summary['target_rps']:g} req/s, latency from when each request was due"
    else:
        mode = f"closed loop, {summary['inflight']} in flight per client, latency from the send"
    rows = [
        ("endpoint", f"{summary['endpoint']}  ({summary['clients']} clients, {mode})"),
        ("requests", f"{summary['requests']} sent, {summary['replies']} answered in {summary['duration_s']:.2f} s"),
        ("throughput", f"{summary['throughput_rps']:,.1f} replies/s"),
        ("latency ms", "  ".join(f"{label} {ms(lat[key])}" for label, key in
                                 (("p50", "p50"), ("p90", "p90"), ("p99", "p99"), ("p99.9", "p999"), ("max", "max")))),
        ("statuses", ", ".join(f"{k} {v}" for k, v in summary["statuses"].items()) or "-"),
        ("errors", ", ".join(f"{k} {v}" for k, v in summary["errors"].items()) or "none"),
        ("lost", str(summary["lost"])),
        ("unmatched", str(summary["unmatched"]) + (f" ({summary['unmatched_duplicates']} duplicates)"
                                                   if summary["unmatched_duplicates"] else "")),
    ]
    if "rewrites" in summary:
        rw = summary["rewrites"]
        rows.append(("rewrites", f"{rw['written']} map files rewritten; server reloads ok {rw['reloads_ok']}, "
                                 f"failed {rw['reloads_failed']}"))
    if "update_latency_ms" in summary:
        upd = summary["update_latency_ms"]
        rows.append(("updates", f"{summary['ops'][OP_NAMES[OP_UPDATE]]} sent, p50 {ms(upd['p50'])} ms, max {ms(upd['max'])} ms"))
    if summary["mode"] == "open_loop" and summary["max_send_lag_ms"] > 10:
        rows.append(("note", f"the load generator fell up to {summary['max_send_lag_ms']:.0f} ms behind its "
                             "schedule; those delays are counted as latency (try --threads)"))
    server = summary.get("server")
    if server and server.get("dropped_replies"):
        rows.append(("server", f"dropped {server['dropped_replies']} replies"))
    width = max(len(label) for label, _ in rows)
    return "\n".join(f"{label:<{width}}  {text}" for label, text in rows)


def plot(summary: dict, path: Path) -> None:
    """A latency percentile plot and throughput over time, side by side, as PNG."""
    try:
        import matplotlib
    except ImportError:
        raise LoadTestError("--plot needs matplotlib: pip install 'pathserver[load]'") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator

    latencies = np.sort(summary["_latencies"])
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.5), dpi=110)
    if latencies.size:
        # The HdrHistogram view: x is 1 / (1 - percentile), so the tail gets the room.
        share = (np.arange(latencies.size) + 0.5) / latencies.size
        left.plot(1.0 / (1.0 - share), latencies, color="tab:blue")
        ticks = [q for q in (0.5, 0.9, 0.99, 0.999, 0.9999, 0.99999) if 1.0 / (1.0 - q) <= 1.0 / (1.0 - share[-1]) * 1.01]
        left.set_xscale("log")
        left.xaxis.set_major_locator(FixedLocator([1.0 / (1.0 - q) for q in ticks]))
        left.xaxis.set_minor_locator(NullLocator())
        left.xaxis.set_major_formatter(FuncFormatter(lambda x, _: f"{100.0 * (1.0 - 1.0 / x):g}%"))
        for key, q in PERCENTILES:
            value = summary["latency_ms"][key]
            left.annotate(f"{key} {value:.2f}", (1.0 / (1.0 - q / 100.0), value), fontsize=8,
                          textcoords="offset points", xytext=(-10, 8))
    left.set_xlabel("percentile")
    left.set_ylabel("latency (ms)")
    loop = "from when due" if summary["mode"] == "open_loop" else "from the send"
    left.set_title(f"path latency ({loop})")
    left.grid(True, which="major", alpha=0.3)
    timeline = summary["timeline"]
    if timeline:
        t = [row["t"] + 0.5 for row in timeline]
        right.bar(t, [row["replies"] for row in timeline], width=0.9, color="tab:green", alpha=0.6, label="replies/s")
        right.set_ylabel("replies per second")
        p99 = right.twinx()
        p99.plot(t, [row["p99_ms"] if row["p99_ms"] is not None else np.nan for row in timeline],
                 color="tab:red", marker="o", markersize=3, label="p99 ms")
        p99.set_ylabel("p99 latency (ms)", color="tab:red")
    right.set_xlabel("time (s)")
    right.set_title(f"throughput: {summary['throughput_rps']:,.0f} replies/s, lost {summary['lost']}, "
                    f"unmatched {summary['unmatched']}")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


