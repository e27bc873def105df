"""Atomic file writing, and model files as safetensors + JSON (loading never runs code)."""

from __future__ import annotations

import codecs
import hashlib
import json
import os
import struct
import sys
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

import torch
from safetensors.torch import load_file

STDIO = "-"  # a path that means standard input (reading) or standard output (writing)


@contextmanager
def errors_name(path: str | Path) -> Iterator[None]:
    """An OSError inside is raised again naming ``path``, the file the user asked for, not the
    temporary file beside it that the error met (``[Errno 13] Permission denied: 'out.txt'``)."""
    try:
        yield
    except OSError as err:
        if err.errno is None or (err.filename == str(path) and err.filename2 is None):
            raise
        raise OSError(err.errno, err.strerror, str(path)) from err


def encode_text(text: str, encoding: str, path: str | Path) -> bytes:
    """``text`` in ``encoding``; a character the codec cannot write is a ValueError naming
    ``path``, the line and the character."""
    try:
        return text.encode(encoding)
    except UnicodeEncodeError as err:
        line = text.count("\n", 0, err.start) + 1
        raise ValueError(
            f"{path}:{line}: {text[err.start]!r} cannot be written in {encoding}: expected text "
            "that encoding holds (or write UTF-8)"
        ) from None


def atomic_write_text(path: str | Path, text: str, encoding: str = "utf-8") -> None:
    """Write ``text`` in ``encoding`` to ``path`` through a temporary file and ``os.replace``:
    an error or an interruption (Ctrl-C) leaves ``path`` as it was and no temporary file
    behind; an OSError names ``path``, and so does a character ``encoding`` cannot write
    (``encode_text``), before any file is made."""
    path = Path(path)
    data = encode_text(text, encoding, path)
    with errors_name(path):
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.chmod(tmp, 0o644)  # mkstemp makes it 0600
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise


def refuse_overwriting_input(input_path: str | Path, output_path: str | Path) -> None:
    """ValueError when ``output_path`` is the file ``input_path`` (the same path, a symlink to
    it or another spelling of it), before anything reads or writes either; ``"-"`` is neither."""
    if STDIO in (str(input_path), str(output_path)):
        return
    same = Path(input_path).resolve() == Path(output_path).resolve()
    if not same and Path(input_path).exists() and Path(output_path).exists():
        same = os.path.samefile(input_path, output_path)
    if same:
        raise ValueError(
            f"output={output_path} is the input file {input_path}: refusing to overwrite the "
            "input; give another output"
        )


def read_input_bytes(path: str | Path) -> tuple[bytes, str]:
    """The bytes of ``path`` and the name to report it by; ``"-"`` reads standard input."""
    if str(path) == STDIO:
        return sys.stdin.buffer.read(), "<stdin>"
    return Path(path).read_bytes(), str(path)


def atomic_write_pieces(path: str | Path, pieces: Iterable[str], encoding: str = "utf-8") -> None:
    """``atomic_write_text`` of the text the ``pieces`` make, written as they come (the whole
    text is never in memory); a character ``encoding`` cannot write is a ValueError naming
    ``path`` and the piece's line."""
    path = Path(path)
    with errors_name(path):
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as f:
                line = 1
                encoder = codecs.getincrementalencoder(encoding)()  # (one byte-order mark)
                for piece in pieces:
                    try:
                        f.write(encoder.encode(piece))
                    except UnicodeEncodeError as err:
                        at = line + piece.count("\n", 0, err.start)
                        raise ValueError(
                            f"{path}:{at}: {piece[err.start]!r} cannot be written in {encoding}: "
                            "expected text that encoding holds (or write UTF-8)"
                        ) from None
                    line += piece.count("\n")
                f.write(encoder.encode("", final=True))
            os.chmod(tmp, 0o644)  # mkstemp makes it 0600
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise


def write_output_text(path: str | Path, text: str, encoding: str = "utf-8") -> None:
    """``text`` in ``encoding`` to standard output for ``"-"`` (its bytes, where the stream
    has them and the encoding is not UTF-8), else atomically to ``path``."""
    if str(path) != STDIO:
        atomic_write_text(path, text, encoding)
        return
    binary = getattr(sys.stdout, "buffer", None)
    if codecs.lookup(encoding).name == "utf-8":
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    data = encode_text(text, encoding, "<stdout>")
    if binary is None:  # a stream of text alone (a test's): the text, once it is known to encode
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    sys.stdout.flush()
    binary.write(data)
    binary.flush()


def write_output_pieces(path: str | Path, pieces: Iterable[str], encoding: str = "utf-8") -> None:
    """The text the ``pieces`` make, written as they come: to standard output for ``"-"``
    (flushed piece by piece), else atomically to ``path`` (``atomic_write_pieces``)."""
    if str(path) != STDIO:
        atomic_write_pieces(path, pieces, encoding)
        return
    for piece in pieces:
        if piece:
            write_output_text(path, piece, encoding)


def atomic_write_json(path: str | Path, obj) -> None:
    atomic_write_text(path, json.dumps(obj, indent=2, sort_keys=False) + "\n")


# safetensors' names of torch's types (the format's header: github.com/huggingface/safetensors)
SAFETENSORS_DTYPES = {
    torch.float64: "F64", torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16",
    torch.int64: "I64", torch.int32: "I32", torch.int16: "I16", torch.int8: "I8",
    torch.uint8: "U8", torch.bool: "BOOL",
}  # fmt: skip


def atomic_save_tensors(path: str | Path, tensors: dict[str, torch.Tensor]) -> None:
    """A ``safetensors`` file written atomically, tensor by tensor from its own memory: no
    copy of the tables (``safetensors.torch.save_file`` builds the bytes of every tensor
    before writing, twice the model's size at the peak), the bytes ``save_file`` writes
    (its order: larger types first, then names; the header padded to 8 bytes)."""
    path = Path(path)
    cpu = {k: v.detach().cpu().contiguous() for k, v in tensors.items()}
    order = sorted(cpu, key=lambda k: (-cpu[k].element_size(), k))
    header: dict = {}
    offset = 0
    for k in order:
        t = cpu[k]
        if t.dtype not in SAFETENSORS_DTYPES:
            raise ValueError(f"tensor {k!r}: type {t.dtype} has no safetensors name")
        size = t.numel() * t.element_size()
        header[k] = {
            "dtype": SAFETENSORS_DTYPES[t.dtype],
            "shape": list(t.shape),
            "data_offsets": [offset, offset + size],
        }
        offset += size
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with errors_name(path):
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(struct.pack("<Q", len(text)))
                f.write(text)
                for k in order:
                    t = cpu[k]
                    if t.numel():
                        raw = t.view(torch.int16) if t.dtype == torch.bfloat16 else t
                        f.write(memoryview(raw.numpy()).cast("B"))
            os.chmod(tmp, 0o644)  # mkstemp makes it 0600
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise


def load_tensors(path: str | Path) -> dict[str, torch.Tensor]:
    return load_file(str(path))


def read_json(path: str | Path):
    """The JSON in ``path``; ValueError naming the file and line when it is not JSON."""
    with open(path, encoding="utf-8") as f:
        try:
            return json.load(f)
        except json.JSONDecodeError as err:
            raise ValueError(f"{path}:{err.lineno}: not valid JSON ({err.msg})") from None


def file_digest(path: str | Path) -> dict:
    """{"bytes", "sha256"} of a file, to check it later (``check_digest``)."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return {"bytes": Path(path).stat().st_size, "sha256": h.hexdigest()}


def check_digest(path: str | Path, expected: dict) -> None:
    """ValueError naming ``path`` unless its size and sha256 are ``expected``'s."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such file")
    size = path.stat().st_size
    if size != expected["bytes"]:
        raise ValueError(
            f"{path}: {size} bytes, expected {expected['bytes']}: the file is truncated or damaged"
        )
    if file_digest(path)["sha256"] != expected["sha256"]:
        raise ValueError(f"{path}: sha256 differs from the one recorded: the file is damaged")
