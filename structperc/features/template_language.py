"""Feature templates written as text, in the spirit of CRF++'s ``%x[row,col]``, named by column.

A template names the values that make one surface feature; the feature fires at token t with
those values (each node + edge feature x × y_0, x × y_-1 × y_0, unless it says ``edges=false``).
One template a line (a file) or a list item (config); ``#`` starts a comment:

    line     := template option*
    template := "bias" | part ("/" part)*           several parts: their values joined
    part     := atom slice*
    atom     := COLUMN "[" offset "]"               the column's value at t + offset
              | FUNCTION "(" part ")"               a function of it (``functions.py``)
    offset   := INT | INT ".." INT                  a range: one template per offset
    slice    := "[" ":" N "]" | "[" "-" N ":" "]"   the first / last N characters (all of a
                                                    shorter value: Brown cluster paths)
    option   := "min_count=" N                      keep its features seen >= N times in training
              | "edges=" ("true" | "false")         false: a node feature only (x × y_0)
              | "optional=" ("true" | "false")      true: left out when a column is absent

``COLUMN`` is ``w`` (the token; ``token`` is the same column), an input column by the name the
corpus gives it (``pos``, ``chunk``, ``lemma``, ``cluster``, ...), or an attribute family of the
features (the gazetteers' ``go`` ..., ``x_city`` ..., a gazetteer file's ``NAME.TYPE``, the word
classes' ``wc100`` ...).  A ``*`` in a column name is a glob: the line is written once per
matching column (in the features' column order), the same column in every part that repeats the
pattern; a glob that matches nothing gives nothing.  Ranges in several parts advance together
(they must be as long); a part with one offset keeps it.  Examples:

    w[-2..2]                     five unigram templates: w[-2], w[-1], w[0], w[1], w[2]
    pos[-1]/pos[0]               the POS bigram ending at t
    lower(w[-2..0])/lower(w[-1..1])   three lower-cased word bigrams
    suffix3(w[0])                the last three characters (only for words of at least three)
    cluster[0][:4]  min_count=1  the first four bits of the token's Brown cluster path
    shape(w[0])  edges=false     the word shape, a node feature only
    x_*[-2..2]                   every external gazetteer attribute, at five offsets

Errors name the template, where it was written (``file:line`` or ``features.templates[i]``)
and what was expected there.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from structperc.features.functions import TemplateError, check_function

WORD = "w"
WORD_ALIASES = ("w", "token")  # both name the token column
_NAME = re.compile(r"[A-Za-z_*][A-Za-z0-9_.*-]*")
_INT = re.compile(r"[+-]?\d+")

__all__ = ["TemplateError", "TemplateSpec", "Part", "Op", "parse_template", "expand"]


@dataclass(frozen=True)
class Op:
    """One step applied to a column's values: a function (``kind`` "fn", ``arg`` its name) or a
    slice (``kind`` "head"/"tail", ``arg`` the number of characters)."""

    kind: str
    arg: str | int


@dataclass(frozen=True)
class Part:
    """``column`` (maybe a glob) at offsets ``lo``..``hi`` (equal: one offset), then ``ops``."""

    column: str
    lo: int
    hi: int
    ops: tuple[Op, ...] = ()

    @property
    def width(self) -> int:
        return self.hi - self.lo + 1

    def attribute(self) -> str:
        """The derived column this part reads, without its offset: ``suffix3(w)``,
        ``cluster[:4]`` (the name the vocabulary keeps its values under)."""
        return render(self.column, self.ops)

    def text(self) -> str:
        """The part as written for one offset (``lo``): ``suffix3(w[-1])``."""
        return render(f"{self.column}[{self.lo}]", self.ops)


def render(base: str, ops: tuple[Op, ...]) -> str:
    for op in ops:
        if op.kind == "fn":
            base = f"{op.arg}({base})"
        elif op.kind == "head":
            base = f"{base}[:{op.arg}]"
        else:
            base = f"{base}[-{op.arg}:]"
    return base


@dataclass(frozen=True)
class TemplateSpec:
    """A parsed template line: its parts (none: the bias) and options; ``where`` says where it
    was written, for messages."""

    source: str
    parts: tuple[Part, ...]
    min_count: int | None = None
    edges: bool = True
    optional: bool = False
    where: str = ""

    def text(self) -> str:
        """The template as written for one offset of each part (canonical form)."""
        return "/".join(p.text() for p in self.parts) or "bias"

    def options_text(self) -> str:
        out = []
        if self.min_count is not None:
            out.append(f"min_count={self.min_count}")
        if not self.edges:
            out.append("edges=false")
        return " ".join(out)

    def line(self) -> str:
        """A line that parses back to this (expanded) template."""
        return " ".join(filter(None, [self.text(), self.options_text()]))


# ------------------------------------------------------------------------------------------
# parsing
# ------------------------------------------------------------------------------------------
def parse_template(text: str, where: str = "") -> TemplateSpec:
    """One template line (comment and options included) -> ``TemplateSpec``."""
    label = f"{where}: " if where else ""
    body = text.split("#", 1)[0].strip()
    if not body:
        raise TemplateError(f"{label}empty template {text!r}: expected e.g. 'w[0]' or 'bias'")
    words = body.split()
    options: dict[str, str] = {}
    while words and "=" in words[-1] and not words[-1].endswith("]"):
        key, _, value = words.pop().partition("=")
        options[key] = value
    spec_text = "".join(words)
    spec = TemplateSpec(source=body, parts=(), where=where)
    spec = _apply_options(spec, options, label)
    if spec_text == "bias":
        return spec
    parser = _Parser(spec_text, f"{label}template {body!r}")
    parts = [parser.part()]
    while parser.peek() == "/":
        parser.take("/")
        parts.append(parser.part())
    parser.end()
    if len({p.width for p in parts if p.width > 1}) > 1:
        raise TemplateError(
            f"{label}template {body!r}: ranges advance together, so they must be as long in "
            f"every part (got {[p.width for p in parts]} offsets)"
        )
    globs = {p.column for p in parts if "*" in p.column}
    if len(globs) > 1:
        raise TemplateError(
            f"{label}template {body!r}: one glob pattern a template, got {sorted(globs)}"
        )
    return replace(spec, parts=tuple(parts))


def _apply_options(spec: TemplateSpec, options: dict[str, str], label: str) -> TemplateSpec:
    for key, value in options.items():
        if key == "min_count":
            if not value.isdigit():
                raise TemplateError(
                    f"{label}template {spec.source!r}: min_count={value!r}, expected a count"
                )
            spec = replace(spec, min_count=int(value))
        elif key in ("edges", "optional"):
            if value.lower() not in ("true", "false"):
                raise TemplateError(
                    f"{label}template {spec.source!r}: {key}={value!r}, expected true or false"
                )
            spec = replace(spec, **{key: value.lower() == "true"})
        else:
            raise TemplateError(
                f"{label}template {spec.source!r}: unknown option {key!r}; expected min_count=N,"
                " edges=true|false or optional=true|false"
            )
    return spec


class _Parser:
    """Recursive descent over one template (no spaces)."""

    def __init__(self, text: str, label: str):
        self.text, self.i, self.label = text, 0, label

    def fail(self, expected: str):
        rest = self.text[self.i :]
        at = f"at {rest!r} (character {self.i + 1})" if rest else "at the end"
        raise TemplateError(f"{self.label}: expected {expected} {at}")

    def peek(self) -> str:
        return self.text[self.i : self.i + 1]

    def take(self, s: str) -> None:
        if not self.text.startswith(s, self.i):
            self.fail(repr(s))
        self.i += len(s)

    def end(self) -> None:
        if self.i != len(self.text):
            self.fail("'/' and another part, or the end of the template")

    def name(self) -> str:
        m = _NAME.match(self.text, self.i)
        if not m:
            self.fail("a column or function name")
        self.i = m.end()
        return m.group()

    def integer(self) -> int:
        m = _INT.match(self.text, self.i)
        if not m:
            self.fail("an integer offset")
        self.i = m.end()
        return int(m.group())

    def part(self) -> Part:
        name = self.name()
        if self.peek() == "(":
            if "*" in name:
                self.fail("a function name without '*'")
            check_function(name, self.label)
            self.take("(")
            inner = self.part()
            self.take(")")
            part = replace(inner, ops=(*inner.ops, Op("fn", name)))
        elif self.peek() == "[":
            self.take("[")
            lo = self.integer()
            hi = lo
            if self.text.startswith("..", self.i):
                self.take("..")
                hi = self.integer()
                if hi < lo:
                    self.fail(f"a range from low to high (got {lo}..{hi})")
            self.take("]")
            part = Part(WORD if name == "token" else name, lo, hi)
        else:
            self.fail("'[offset]' after a column or '(' after a function")
        while self.text.startswith("[", self.i):
            part = replace(part, ops=(*part.ops, self.slice()))
        return part

    def slice(self) -> Op:
        self.take("[")
        if self.peek() == ":":
            self.take(":")
            n = self.integer()
            op = Op("head", n)
        elif self.peek() == "-":
            self.take("-")
            n = self.integer()
            self.take(":")
            op = Op("tail", n)
        else:
            self.fail("a slice '[:N]' or '[-N:]'")
        if n <= 0:
            self.fail("a slice of at least one character")
        self.take("]")
        return op


def parse_templates(lines: list[str], where: str) -> list[TemplateSpec]:
    """The templates of a config list (``where`` e.g. ``features.templates``: items named
    ``where[i]``) or of a file's lines (``where`` the path: lines named ``path:N``); blank and
    comment lines are skipped."""
    out = []
    for i, line in enumerate(lines):
        if not line.split("#", 1)[0].strip():
            continue
        label = f"{where}:{i + 1}" if not where.startswith("features.") else f"{where}[{i}]"
        out.append(parse_template(line, label))
    return out


# ------------------------------------------------------------------------------------------
# expansion against the columns there are
# ------------------------------------------------------------------------------------------
def _glob(pattern: str) -> re.Pattern:
    return re.compile("^" + ".*".join(re.escape(s) for s in pattern.split("*")) + "$")


def expand(specs: list[TemplateSpec], columns: list[str]) -> list[TemplateSpec]:
    """Each template once per offset of its ranges and per column its glob matches, in that
    order (``columns``: the columns there are, in the features' order); a template naming an
    absent column is an error naming it and the ones present, unless it is ``optional``."""
    present = set(columns) | {WORD}
    out: list[TemplateSpec] = []
    for spec in specs:
        if not spec.parts:
            out.append(spec)
            continue
        globs = {p.column for p in spec.parts if "*" in p.column}
        names: list[str | None] = [None]
        if globs:
            regex = _glob(next(iter(globs)))
            names = [c for c in columns if regex.match(c)]
        for name in names:
            parts = [p if "*" not in p.column else replace(p, column=name) for p in spec.parts]
            missing = [p.column for p in parts if p.column not in present]
            if missing:
                if spec.optional:
                    continue
                shown = ", ".join(["w", *[c for c in columns if c != WORD]])
                raise TemplateError(
                    f"{spec.where}: template {spec.source!r} names the column {missing[0]!r}, "
                    f"which the corpus and features lack; present: {shown}"
                )
            for k in range(max(p.width for p in parts)):  # a range's k-th offset, in every part
                at_k = tuple(
                    replace(p, lo=p.lo + k, hi=p.lo + k) if p.width > 1 else p for p in parts
                )
                out.append(replace(spec, parts=at_k, optional=False))
    return out
