"""A load test of ``structperc-serve`` on loopback: 16 clients for 60 s.

    .venv/bin/python experiments/serve/load_test.py --model runs/main

Starts ``structperc-serve model=MODEL`` on a free loopback port, waits for ``/health``, then runs
``clients`` threads for ``seconds``, each sending one request after another on its own
connection: ``POST /entities`` with Reuters-21578 text (``$STRUCTPERC_DATA/unlabeled``), a short
text (a paragraph of 100-400 characters) or a long one (20,000 characters) by turns, and every
tenth request malformed (not JSON, the wrong shape, or CoNLL lines of the wrong columns to
``/tag``).  It records every request's status and latency, the tokens of the answered texts (the
server's tokenizer, counted by the Python API), and the server's resident memory (``/proc``) at
the start and at the end; then stops the server with SIGTERM.  Writes ``results.json`` and
``README.md`` beside this file.
"""

from __future__ import annotations

import argparse
import datetime
import gzip
import http.client
import json
import os
import platform
import random
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
MALFORMED = [  # (path, body, the status expected)
    ("/entities", b"this is not JSON", 400),
    ("/entities", b'{"texts": "the wrong key"}', 400),
    ("/tag", b'{"tokens": "not a list"}', 400),
    ("/tag", b'{"conll": "John NNP\\n"}', 422),
]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rss_mb(pid: int) -> float:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(status.split("VmRSS:")[1].split()[0]) / 1024


def texts(data_dir: Path) -> tuple[list[str], list[str]]:
    """(short paragraphs of 100-400 characters, long texts of 20,000) of Reuters-21578."""
    with gzip.open(data_dir / "unlabeled" / "reuters21578.txt.gz", "rt", encoding="utf-8") as f:
        body = f.read(3_000_000)
    lines = [line.strip() for line in body.splitlines() if line.strip()]
    short = [line for line in lines if 100 <= len(line) <= 400]
    long = [body[i : i + 20_000] for i in range(0, len(body) - 20_000, 20_000)]
    return short, long


def request(conn: http.client.HTTPConnection, path: str, body: bytes) -> tuple[int, bytes]:
    conn.request("POST", path, body=body, headers={"Content-Type": "application/json"})
    response = conn.getresponse()
    return response.status, response.read()


def client(port: int, seed: int, until: float, short, long, records: list) -> None:
    """One client: requests one after another until ``until``."""
    rng = random.Random(seed)
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    k = 0
    while time.perf_counter() < until:
        k += 1
        if k % 10 == 0:
            path, body, expected = rng.choice(MALFORMED)
            kind, text = "malformed", None
        else:
            kind = "long" if k % 3 == 0 else "short"
            text = rng.choice(long if kind == "long" else short)
            path, body, expected = "/entities", json.dumps({"text": text}).encode(), 200
        t0 = time.perf_counter()
        try:
            status, raw = request(conn, path, body)
        except (OSError, http.client.HTTPException) as err:
            status, raw = -1, str(err).encode()
            conn.close()
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        latency = time.perf_counter() - t0
        one_line = raw.count(b"\n") == 0
        records.append({"kind": kind, "status": status, "expected": expected,
                        "latency": latency, "text": text, "one_line": one_line})  # fmt: skip
    conn.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default=str(REPO / "runs" / "main"))
    ap.add_argument("--clients", type=int, default=16)
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--threads", type=int, default=2, help="the server's threads= setting")
    args = ap.parse_args()
    data = Path(os.environ.get("STRUCTPERC_DATA", REPO.parent / "shared" / "data"))
    short, long = texts(data)
    port = free_port()
    model = str(Path(args.model).resolve())
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    server = subprocess.Popen(
        [sys.executable, "-m", "structperc.serve", f"model={model}", f"port={port}",
         f"threads={args.threads}", "log_level=warning"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    t_start = time.perf_counter()
    while True:
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            conn.request("GET", "/health")
            if conn.getresponse().status == 200:
                break
        except OSError:
            if server.poll() is not None:
                sys.exit(f"the server exited: {server.stderr.read()}")
            time.sleep(0.2)
    ready_seconds = time.perf_counter() - t_start
    memory_start = rss_mb(server.pid)
    records: list[dict] = []
    load_start = os.getloadavg()[0]
    until = time.perf_counter() + args.seconds
    threads = [
        threading.Thread(target=client, args=(port, k, until, short, long, records))
        for k in range(args.clients)
    ]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0
    memory_end = rss_mb(server.pid)
    load_end = os.getloadavg()[0]
    server.send_signal(signal.SIGTERM)
    exit_status = server.wait(timeout=120)

    sys.path.insert(0, str(REPO))
    from structperc.data.text import read_text

    answered = [r for r in records if r["kind"] != "malformed" and r["status"] == 200]
    tokens = sum(len(p.document) for r in answered for p in read_text(r["text"]))
    latencies = sorted(r["latency"] for r in records)
    by_kind = {
        kind: sorted(r["latency"] for r in records if r["kind"] == kind)
        for kind in ("short", "long", "malformed")
    }

    def pct(values: list[float], q: float) -> float | None:
        return values[min(len(values) - 1, int(q * len(values)))] if values else None

    results = {
        "command": f".venv/bin/python experiments/serve/load_test.py --model {args.model}",
        "model": args.model,
        "clients": args.clients,
        "seconds": wall,
        "server_threads": args.threads,
        "ready_seconds": ready_seconds,
        "requests": len(records),
        "requests_per_second": len(records) / wall,
        "tokens": tokens,
        "tokens_per_second": tokens / wall,
        "latency_p50": pct(latencies, 0.5),
        "latency_p99": pct(latencies, 0.99),
        "latency_by_kind": {
            k: {"n": len(v), "p50": pct(v, 0.5), "p99": pct(v, 0.99)} for k, v in by_kind.items()
        },  # fmt: skip
        "statuses": {
            kind: dict(sorted(Counter(r["status"] for r in records if r["kind"] == kind).items()))
            for kind in ("short", "long", "malformed")
        },
        "unexpected": sum(r["status"] != r["expected"] for r in records),
        "errors_not_one_line": sum(not r["one_line"] for r in records if r["status"] != 200),
        "memory_start_mb": memory_start,
        "memory_end_mb": memory_end,
        "server_exit_status": exit_status,
        "loadavg": [load_start, load_end],
        "machine": f"{os.cpu_count()} CPUs, {platform.platform()}",
        "commit": subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True
        ).stdout.strip(),  # fmt: skip
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    }
    (HERE / "results.json").write_text(json.dumps(results, indent=1) + "\n")
    (HERE / "README.md").write_text(render(results))
    print(render(results))


def render(r: dict) -> str:
    drift = 100 * (r["memory_end_mb"] - r["memory_start_mb"]) / r["memory_start_mb"]
    kinds = r["latency_by_kind"]
    lines = [
        "# Load test of `structperc-serve`",
        "",
        "Generated by `experiments/serve/load_test.py` from `results.json` (the script's own "
        "measurements): the server on loopback with the main job's model, "
        f"{r['clients']} clients for {r['seconds']:.0f} s, each sending requests one after "
        "another: `POST /entities` with Reuters-21578 text, short (100-400 characters) and "
        "long (20,000 characters) paragraphs by turns, every tenth request malformed (not JSON, "
        "the wrong keys, a token list that is not one, CoNLL lines of the wrong columns).",
        "",
        f"    STRUCTPERC_DATA=../shared/data {r['command']}",
        "",
        "| measure | value |",
        "|---|---:|",
        f"| requests | {r['requests']:,} |",
        f"| requests/s | {r['requests_per_second']:.1f} |",
        f"| tokens tagged (answered texts) | {r['tokens']:,} |",
        f"| tokens/s | {r['tokens_per_second']:,.0f} |",
        f"| latency p50 / p99, all requests | {r['latency_p50'] * 1000:.0f} ms / "
        f"{r['latency_p99'] * 1000:.0f} ms |",
    ]
    for kind in ("short", "long", "malformed"):
        k = kinds[kind]
        if k["n"]:
            lines.append(f"| latency p50 / p99, {kind} ({k['n']:,}) | {k['p50'] * 1000:.0f} ms / "
                         f"{k['p99'] * 1000:.0f} ms |")  # fmt: skip
    statuses = "; ".join(
        f"{kind}: " + ", ".join(f"{s} × {n:,}" for s, n in counts.items())
        for kind, counts in r["statuses"].items()
    )
    lines += [
        f"| responses by status | {statuses} |",
        f"| responses other than expected (200; 400/422 for the malformed) | {r['unexpected']} |",
        f"| error bodies of more than one line | {r['errors_not_one_line']} |",
        f"| server memory at the start / the end | {r['memory_start_mb']:,.0f} MB / "
        f"{r['memory_end_mb']:,.0f} MB ({drift:+.1f}%) |",
        f"| server ready (model loaded, kernels warm) | {r['ready_seconds']:.1f} s |",
        f"| server exit after SIGTERM | status {r['server_exit_status']} |",
        "",
        f"Machine: {r['machine']}; the clients ran on the same 2 CPUs as the server (threads="
        f"{r['server_threads']}); load average {r['loadavg'][0]:.1f} at the start, "
        f"{r['loadavg'][1]:.1f} at the end; commit `{r['commit'][:12]}`; {r['date']}.",
        "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
