"""``structperc-serve`` started on a free loopback port: every endpoint against the Python API,
every error as one line of JSON with its status, a request in flight answered after SIGTERM;
and the decoder taking the requests that wait as one batch."""

from __future__ import annotations

import asyncio
import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("starlette")
pytest.importorskip("uvicorn")

from structperc.data.conll import read_conll  # noqa: E402
from structperc.data.document import Document  # noqa: E402
from structperc.inference.service import Decoder, Job  # noqa: E402
from structperc.inference.tagger import Tagger  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
MAX_BYTES = 4000
TEXT = "John Smith lives in Paris .\n\nMary Jones works for Acme Corp in London ."


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(model: Path, port: int, *settings: str) -> subprocess.Popen:
    """The server on ``port``, once ``/health`` answers (its log on stderr)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    args = [f"model={model}", f"port={port}", "log_level=warning", "threads=1", *settings]
    proc = subprocess.Popen(
        [sys.executable, "-m", "structperc.serve", *args],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    for _ in range(600):
        if proc.poll() is not None:
            raise AssertionError(f"the server exited: {proc.stderr.read()}")
        try:
            if call(port, "GET", "/health")[0] == 200:
                return proc
        except OSError:
            time.sleep(0.1)
    proc.kill()
    raise AssertionError("the server did not answer /health")


def call(port: int, method: str, path: str, body: bytes | str | None = None, kind=None):
    """(status, the decoded JSON body, the raw body) of one request."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    headers = {"Content-Type": kind or "application/json"}
    conn.request(method, path, body=body, headers=headers)
    response = conn.getresponse()
    raw = response.read()
    conn.close()
    return response.status, json.loads(raw), raw


@pytest.fixture(scope="module")
def server(token_model):
    port = free_port()
    proc = start(token_model, port, f"max_bytes={MAX_BYTES}")
    yield port
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=60)


def post(port: int, path: str, data) -> tuple[int, dict, bytes]:
    return call(port, "POST", path, json.dumps(data))


def test_health_and_model(server, token_model):
    assert call(server, "GET", "/health")[:2] == (200, {"status": "ok"})
    status, card, _ = call(server, "GET", "/model")
    tagger = Tagger.load(token_model)
    assert status == 200 and card["labels"] == tagger.labels and card["structure"] == "chain"
    assert card["features"]["count"] == tagger.features.num_features
    assert card["run"] == str(token_model) and card["decoding"]["compiled"] is True
    assert card["scores"]["test"]["f1"] == pytest.approx(
        json.loads((token_model / "results.json").read_text())["test"]["f1"]
    )


def test_entities_are_the_taggers(server, token_model):
    expected = Tagger.load(token_model).entities(TEXT)
    assert expected  # (the synthetic model finds entities here)
    assert post(server, "/entities", {"text": TEXT})[:2] == (200, {"entities": expected})
    plain = call(server, "POST", "/entities", TEXT.encode(), kind="text/plain")
    assert plain[:2] == (200, {"entities": expected})
    assert post(server, "/entities", {"text": " \n\n "})[:2] == (200, {"entities": []})


def test_tag_tokens_documents_and_conll_lines(server, token_model, synthetic_dir):
    tagger = Tagger.load(token_model)
    tokens = "John Smith lives in Paris .".split()
    assert post(server, "/tag", {"tokens": tokens})[:2] == (200, {"tags": tagger.tag(tokens)})
    docs = [tokens, [], "Mary works for Acme".split()]
    expected = [tagger.tag(d) if d else [] for d in docs]
    assert post(server, "/tag", {"documents": docs})[:2] == (200, {"tags": expected})
    path = synthetic_dir / "conll2003" / "test.txt"
    lines = "\n".join(path.read_text().splitlines()[:40]) + "\n"
    status, answer, _ = post(server, "/tag", {"conll": lines})
    head = Path(path.parent / "head.txt")
    head.write_text(lines)
    assert status == 200 and answer["tags"] == tagger.tag_documents(read_conll(head))


@pytest.mark.parametrize(
    ("path", "body", "status", "says"),
    [
        ("/tag", b"not json", 400, "not JSON"),
        ("/tag", b"[1, 2]", 400, "expected a JSON object"),
        ("/tag", b'{"tokens": "John"}', 400, "must be a list of strings"),
        ("/tag", b'{"tokens": ["a b"]}', 400, "is not a token"),
        ("/tag", b'{"tokens": ["a"], "conll": "x"}', 400, "expected one of"),
        ("/tag", b"\xff\xfe", 400, "not UTF-8"),
        ("/entities", b'{"texts": "x"}', 400, 'expected {"text"'),
        ("/tag", b'{"conll": "John NNP\\n"}', 422, "request:1: expected 4 columns"),
        ("/tag", b"x" * (MAX_BYTES + 1), 413, f"at most {MAX_BYTES}"),
        ("/nowhere", b"", 404, "Not Found"),
    ],
)
def test_errors_are_one_line_of_json(server, path, body, status, says):
    got, answer, raw = call(server, "POST", path, body)
    assert got == status and says in answer["error"], answer
    assert list(answer) == ["error"] and b"\n" not in raw.strip()
    assert call(server, "GET", "/tag")[0] == 405


def test_a_conll_error_is_the_cli_message(server, token_model, tmp_path):
    """The 422 message is ``structperc-tag``'s for the same lines, the file named ``request``."""
    bad = tmp_path / "bad.txt"
    bad.write_text("John NNP\n")
    done = subprocess.run(
        [sys.executable, "-m", "structperc.predict", f"model={token_model}", f"input={bad}",
         f"output={tmp_path / 'out.txt'}"],
        env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True,
    )  # fmt: skip
    cli = done.stderr.strip().splitlines()[-1].split(f"{bad}", 1)[1]
    status, answer, _ = post(server, "/tag", {"conll": "John NNP\n"})
    assert status == 422 and answer["error"] == "request" + cli


def test_sigterm_answers_the_request_in_flight(token_model):
    """A request whose body is still arriving when SIGTERM comes is answered; then the server
    exits, without a traceback (uvicorn ends by the signal it caught, once it has shut down)."""
    port = free_port()
    proc = start(token_model, port)
    body = json.dumps({"text": TEXT}).encode()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    conn.putrequest("POST", "/entities")
    conn.putheader("Content-Type", "application/json")
    conn.putheader("Content-Length", str(len(body)))
    conn.endheaders()
    conn.send(body[:10])
    time.sleep(0.5)  # the request is in flight
    proc.send_signal(signal.SIGTERM)
    time.sleep(0.5)
    conn.send(body[10:])
    response = conn.getresponse()
    assert response.status == 200 and json.loads(response.read())["entities"]
    assert proc.wait(timeout=60) in (0, -signal.SIGTERM)
    assert "Traceback" not in proc.stderr.read()


def test_requests_waiting_are_decoded_as_one_batch(token_model):
    """Jobs queued while the decoder is busy are taken together: one decode for them all, each
    answered with its own documents' tags."""
    tagger = Tagger.load(token_model)
    decoder = Decoder(tagger)
    docs = [Document("John lives in Paris .".split()), Document("Mary works .".split())]

    async def three_requests():
        loop = asyncio.get_running_loop()
        jobs = [Job([d], None, None, False, loop.create_future()) for d in [*docs, docs[0]]]
        with decoder.lock:  # the decoder waits for the lock: all three are queued first
            for job in jobs:
                decoder.waiting.append(job)
            decoder.lock.notify()
        return await asyncio.gather(*(j.answer for j in jobs))

    answers = asyncio.run(three_requests())
    decoder.stop()
    assert decoder.batches == 1
    assert answers == [[tagger.tag(d.tokens)] for d in [*docs, docs[0]]]
