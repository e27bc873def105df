"""The tagging service: a Starlette application over one loaded ``Tagger``.

    GET  /health     {"status": "ok"}
    GET  /model      what the model is: labels, features, lineage, scores (``model_card``)
    POST /entities   {"text": "..."} (or the text itself, text/plain)
                     -> {"entities": [{"start", "end", "type", "text"}, ...]}, character offsets
                     into the text, as ``structperc-tag input_format=text output_format=jsonl``
    POST /tag        {"tokens": [...]} -> {"tags": [...]}; {"documents": [[...], ...]} ->
                     {"tags": [[...], ...]}; {"conll": "LINES"} (columns as structperc-tag reads
                     them) -> {"tags": [[...], ...]}, a tag list per document

Requests are decoded together: each request's documents wait in a queue, and one thread takes
every request waiting (up to ``max_batch_tokens`` tokens) and tags them as one batch
(``Tagger.label_batch``), so concurrent requests share the decode and the model is used by one
thread at a time.  A body over ``max_bytes`` is refused with 413 before it is read whole; a
body that is not JSON of the expected shape is 400; input the model cannot tag (CoNLL lines of
the wrong columns, columns the model needs and no column tagger gives) is 422 with the one-line
message ``structperc-tag`` prints.  Every error is one line of JSON, ``{"error": "..."}``.
"""

from __future__ import annotations

import asyncio
import json
import tempfile
import threading
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from structperc.data.document import Document
from structperc.data.sentences import sentence_starts
from structperc.data.tokenization import LONE_CR, ChunkTokenizer, paragraphs
from structperc.inference.formats import InputSpec
from structperc.inference.tagger import MissingColumns, Tagger
from structperc.inference.token_batch import TokenBatch

MAX_BYTES = 1 << 20  # the largest request body accepted
MAX_BATCH_TOKENS = 1 << 15  # the tokens of requests decoded at once


class BadRequest(ValueError):
    """A request the service cannot read (400)."""


class Unprocessable(ValueError):
    """A request it reads but cannot tag (422)."""


def error(status: int, message: str) -> JSONResponse:
    """The one-line JSON error of every failure."""
    return JSONResponse({"error": " ".join(str(message).split())}, status_code=status)


@dataclass
class Job:
    """One request's documents, what to answer, and where: ``answer`` (an asyncio future of the
    request's event loop) gets the tags of each document, or the entities of ``text``."""

    docs: list[Document]
    text: str | None  # the posted text (/entities), for character offsets
    offsets: list[list[int]] | None  # each document's token starts in it
    tag_columns: bool
    answer: asyncio.Future

    def give(self, value=None, failure: Exception | None = None) -> None:
        """Answer from the decoder's thread."""
        loop = self.answer.get_loop()
        if failure is not None:
            loop.call_soon_threadsafe(_settle, self.answer, None, failure)
        else:
            loop.call_soon_threadsafe(_settle, self.answer, value, None)


def _settle(future: asyncio.Future, value, failure: Exception | None) -> None:
    if future.done():  # (the request was given up)
        return
    if failure is not None:
        future.set_exception(failure)
    else:
        future.set_result(value)


class Decoder:
    """The thread that tags the waiting jobs, a batch at a time."""

    def __init__(self, tagger: Tagger, max_batch_tokens: int = MAX_BATCH_TOKENS):
        self.tagger, self.max_batch_tokens = tagger, max_batch_tokens
        self.waiting: list[Job] = []
        self.lock = threading.Condition()
        self.stopping = False
        self.batches = 0  # decodes run (the tests read it)
        self.thread = threading.Thread(target=self._loop, name="decoder", daemon=True)
        self.thread.start()

    def submit(self, job: Job) -> None:
        with self.lock:
            self.waiting.append(job)
            self.lock.notify()

    def stop(self) -> None:
        with self.lock:
            self.stopping = True
            self.lock.notify()
        self.thread.join()

    def _take(self) -> list[Job]:
        """The jobs waiting, up to ``max_batch_tokens`` tokens (at least one job)."""
        with self.lock:
            while not self.waiting and not self.stopping:
                self.lock.wait()
            taken, tokens = [], 0
            while self.waiting:
                size = sum(len(d) for d in self.waiting[0].docs)
                if taken and tokens + size > self.max_batch_tokens:
                    break
                taken.append(self.waiting.pop(0))
                tokens += size
            return taken

    def _loop(self) -> None:
        while True:
            jobs = self._take()
            if not jobs:
                return  # stopping, nothing left
            for tag_columns in (False, True):
                group = [j for j in jobs if j.tag_columns == tag_columns]
                if group:
                    self._decode(group, tag_columns)

    def _decode(self, jobs: list[Job], tag_columns: bool) -> None:
        """Tag the documents of ``jobs`` as one batch and give each job its answer."""
        try:
            docs = [d for job in jobs for d in job.docs]
            columns = () if tag_columns else tuple(self.tagger.needed_columns())
            batch = TokenBatch.of(docs, columns)
            ids = self.tagger.label_batch(batch, tag_columns) if len(batch) else np.zeros(0, int)
            self.batches += 1
        except Exception as err:  # every job of the batch fails alike
            for job in jobs:
                job.give(failure=err)
            return
        labels = self.tagger.label_set
        bounds = iter(batch.documents.tolist())
        for job in jobs:
            parts = [ids[a:b] for a, b in (next(bounds) for _ in job.docs)]
            if job.text is None:
                job.give([labels.tags(p) for p in parts])
            else:
                job.give(entities(job, parts, labels))


def entities(job: Job, parts: list[np.ndarray], labels) -> list[dict]:
    """The entities of a posted text (its documents' label ids), as ``Tagger.entities`` gives
    them: character offsets into the text."""
    out = []
    for doc, starts, ids in zip(job.docs, job.offsets, parts, strict=True):
        for s, e, kind in zip(*(a.tolist() for a in labels.chunks(ids)), strict=True):
            start, end = starts[s], starts[e - 1] + len(doc.tokens[e - 1])
            kind = labels.types[kind]
            out.append({"start": start, "end": end, "type": kind, "text": job.text[start:end]})
    return out


class Service:
    """The application's state: the tagger, its decoder, the limits, the text tokenizer."""

    def __init__(self, tagger: Tagger, card: dict, max_bytes: int, max_batch_tokens: int):
        self.tagger, self.card = tagger, card
        self.max_bytes = max_bytes
        self.max_batch_tokens = max_batch_tokens
        self.tokenizer = ChunkTokenizer()
        self.decoder: Decoder | None = None

    async def body(self, request: Request) -> bytes:
        """The request's body; 413 when it is larger than ``max_bytes`` (by its declared
        length, before reading, or as it arrives)."""
        declared = request.headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_bytes:
            raise HTTPException(413, f"a body of {declared} bytes: at most {self.max_bytes}")
        chunks, size = [], 0
        async for chunk in request.stream():
            size += len(chunk)
            if size > self.max_bytes:
                raise HTTPException(413, f"a body of over {self.max_bytes} bytes: at most so many")
            chunks.append(chunk)
        return b"".join(chunks)

    async def json_body(self, request: Request, plain_text_key: str | None = None) -> dict:
        """The body as a JSON object (text/plain: ``{plain_text_key: text}``); 400 otherwise."""
        raw = await self.body(request)
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as err:
            raise BadRequest(f"the body is not UTF-8 (byte {err.start})") from None
        kind = request.headers.get("content-type", "").split(";")[0].strip()
        if plain_text_key and kind == "text/plain":
            return {plain_text_key: text}
        try:
            data = json.loads(text)
        except json.JSONDecodeError as err:
            raise BadRequest(f"the body is not JSON: {err}") from None
        if not isinstance(data, dict):
            raise BadRequest(f"expected a JSON object, got {type(data).__name__}")
        return data

    async def run(self, job: Job):
        """Queue ``job`` for the decoder and wait for its answer."""
        self.decoder.submit(job)
        try:
            return await job.answer
        except MissingColumns as err:
            raise Unprocessable(str(err)) from None

    def text_job(self, text: str) -> Job:
        """The paragraphs of a posted text as documents (``data.text.read_text``'s)."""
        if self.tagger.plain:
            raise Unprocessable("the model tags plain labels (no chunk prefixes): no entities")
        text = LONE_CR.sub("\n", text)
        docs, offsets = [], []
        for offset, paragraph in paragraphs(text):
            tokens = self.tokenizer.tokenize(paragraph, offset)
            if len(tokens):
                starts = sentence_starts(tokens.values, tokens.starts, tokens.spaced)
                docs.append(Document(tokens.values, sentence_starts=starts, source="request"))
                offsets.append(tokens.starts)
        answer = asyncio.get_running_loop().create_future()
        return Job(docs, text, offsets, self.tags_columns(docs), answer)

    def tags_columns(self, docs: list[Document]) -> bool:
        """``Tagger.tags_columns``, its failure a 422."""
        if not docs:
            return False
        try:
            return self.tagger.tags_columns(docs)
        except MissingColumns as err:
            raise Unprocessable(str(err)) from None


def tokens_of(value, key: str) -> list[str]:
    """A JSON list of token strings (non-empty, no whitespace inside); 400 otherwise."""
    if not isinstance(value, list) or not all(isinstance(t, str) for t in value):
        raise BadRequest(f'"{key}" must be a list of strings (tokens)')
    for t in value:
        if not t or any(c.isspace() for c in t):
            raise BadRequest(f'"{key}": {t!r} is not a token (empty, or holds whitespace)')
    return value


def conll_documents(lines: str, tagger: Tagger) -> list[Document]:
    """CoNLL lines read as ``structperc-tag`` reads a file (the model's layout), errors naming
    the request's line; 422 for lines it cannot read."""
    with tempfile.TemporaryDirectory(prefix="structperc-serve-") as folder:
        path = Path(folder) / "request"
        path.write_text(lines, encoding="utf-8")
        try:
            return InputSpec().read_documents(path, tagger.corpus_format)
        except ValueError as err:
            raise Unprocessable(str(err).replace(str(path), "request")) from None


def make_app(
    tagger: Tagger,
    card: dict,
    max_bytes: int = MAX_BYTES,
    max_batch_tokens: int = MAX_BATCH_TOKENS,
) -> Starlette:
    """The application over ``tagger`` (loaded once, before the server starts) and its model
    card (``model_card``)."""
    service = Service(tagger, card, max_bytes, max_batch_tokens)

    async def health(request: Request) -> JSONResponse:
        return JSONResponse({"status": "ok"})

    async def model(request: Request) -> JSONResponse:
        return JSONResponse(service.card)

    async def entities_endpoint(request: Request) -> JSONResponse:
        data = await service.json_body(request, plain_text_key="text")
        if set(data) != {"text"} or not isinstance(data["text"], str):
            raise BadRequest('expected {"text": "..."}')
        job = service.text_job(data["text"])
        return JSONResponse({"entities": await service.run(job)})

    async def tag_endpoint(request: Request) -> JSONResponse:
        data = await service.json_body(request)
        keys = set(data) & {"tokens", "documents", "conll"}
        if len(keys) != 1 or set(data) != keys:
            raise BadRequest('expected one of {"tokens": [...]}, {"documents": [[...], ...]}, '
                             '{"conll": "lines"}')  # fmt: skip
        if "tokens" in data:
            docs = [Document(tokens_of(data["tokens"], "tokens"), source="request")]
        elif "documents" in data:
            if not isinstance(data["documents"], list):
                raise BadRequest('"documents" must be a list of token lists')
            docs = [
                Document(tokens_of(d, "documents"), source="request") for d in data["documents"]
            ]
        else:
            if not isinstance(data["conll"], str):
                raise BadRequest('"conll" must be a string of CoNLL lines')
            docs = await asyncio.get_running_loop().run_in_executor(
                None, conll_documents, data["conll"], tagger
            )
        answer = asyncio.get_running_loop().create_future()
        job = Job([d for d in docs if len(d)], None, None, service.tags_columns(docs), answer)
        tags = iter(await service.run(job) if job.docs else [])
        out = [next(tags) if len(d) else [] for d in docs]
        return JSONResponse({"tags": out[0] if "tokens" in data else out})

    async def on_http_error(request: Request, exc: HTTPException) -> JSONResponse:
        return error(exc.status_code, exc.detail)

    async def on_bad_request(request: Request, exc: Exception) -> JSONResponse:
        return error(400, str(exc))

    async def on_unprocessable(request: Request, exc: Exception) -> JSONResponse:
        return error(422, str(exc))

    @asynccontextmanager
    async def lifespan(app):
        service.decoder = Decoder(tagger, max_batch_tokens)
        try:
            yield
        finally:  # after the server has answered every request in flight
            service.decoder.stop()

    routes = [
        Route("/health", health, methods=["GET"]),
        Route("/model", model, methods=["GET"]),
        Route("/entities", entities_endpoint, methods=["POST"]),
        Route("/tag", tag_endpoint, methods=["POST"]),
    ]
    handlers = {
        HTTPException: on_http_error,
        BadRequest: on_bad_request,
        Unprocessable: on_unprocessable,
    }
    app = Starlette(routes=routes, exception_handlers=handlers, lifespan=lifespan)
    app.state.service = service
    return app
