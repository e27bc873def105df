"""Feature templates compiled into the vocabulary's (attribute, offset) gathers.

The templates of ``template_language.py`` are expanded against the columns there are, then
compiled: each distinct part without its offset (``suffix3(w)``, ``cluster[:4]``, ``pos``)
becomes one derived attribute column, computed once per corpus (a function once per distinct
value), and each template becomes a tuple of (attribute, offset) pairs, the form
``extract.Vocabulary`` gathers by offset and codes in one vectorised pass, as it does Table 1's
named attributes.  So a template that says what a named attribute says gives the same feature
ids (``conf/features/kazama_templates.yaml`` against ``kazama.yaml``: ``tests/test_templates.py``).

Shapes: a column is a list of N values (str or None: no feature), N the tokens of the corpus
(or of the piece being extracted), documents spanning ``doc_bounds`` [(start, end), ...].
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

from structperc.features.extract import FactorColumn
from structperc.features.functions import Value, apply_function
from structperc.features.template_language import (
    Part,
    TemplateError,
    TemplateSpec,
    expand,
    parse_templates,
    render,
)
from structperc.features.templates import Template

PRESETS = Path(__file__).resolve().parent / "presets"


def preset_names() -> list[str]:
    """The names of the template presets shipped with the package (``presets/*.tpl``)."""
    return sorted(p.stem for p in PRESETS.glob("*.tpl"))


def _template_file(path: str) -> Path:
    """The file ``path`` names: a template file, or a shipped preset by its name
    (``structperc/features/presets/NAME.tpl``, e.g. ``kazama``)."""
    file = Path(path)
    if not file.is_file() and (PRESETS / f"{path}.tpl").is_file():
        file = PRESETS / f"{path}.tpl"
    if not file.is_file():
        raise FileNotFoundError(
            f"template file not found: {path} (features.template_file: a file of templates, or "
            f"a preset: {', '.join(preset_names())})"
        )
    return file


def template_path(path: str | None) -> str | None:
    """The template file ``features.template_file`` names (a preset's path), or None."""
    return str(_template_file(path)) if path else None


def read_template_specs(
    templates: list[str] | None, template_file: str | None
) -> list[TemplateSpec]:
    """The templates of ``features.template_file`` then those of ``features.templates``."""
    specs: list[TemplateSpec] = []
    if template_file:
        lines = _template_file(template_file).read_text(encoding="utf-8-sig").splitlines()
        specs += parse_templates(lines, template_file)
    if templates:
        if isinstance(templates, str):
            raise TemplateError(
                f"features.templates must be a list of templates, got the string {templates!r}"
            )
        specs += parse_templates([str(t) for t in templates], "features.templates")
    if not specs:
        raise TemplateError("no feature templates: features.templates and template_file are empty")
    return specs


@dataclass
class CompiledTemplates:
    """Expanded templates (one offset a part, no globs) and how to compute their columns."""

    specs: list[TemplateSpec]
    attributes: dict[str, Part] = field(init=False)  # attribute name -> its part at offset 0

    def __post_init__(self):
        self.attributes = {}
        for spec in self.specs:
            for part in spec.parts:
                self.attributes.setdefault(part.attribute(), replace(part, lo=0, hi=0))

    @classmethod
    def build(cls, specs: list[TemplateSpec], columns: list[str]) -> CompiledTemplates:
        return cls(expand(specs, columns))

    @classmethod
    def from_lines(cls, lines: list[str], where: str) -> CompiledTemplates:
        """Templates saved by ``lines()`` (a model file's), parsed again (no code runs: an
        unregistered function is an error naming ``where``)."""
        return cls(parse_templates(lines, where))

    def lines(self) -> list[str]:
        return [spec.line() for spec in self.specs]

    @property
    def templates(self) -> list[Template]:
        """Per template, its (attribute, offset) pairs; () for the bias."""
        return [tuple((p.attribute(), p.lo) for p in spec.parts) for spec in self.specs]

    def min_counts(self, default: int) -> list[int] | None:
        """Per template, its cutoff; None when every template takes ``default``."""
        if all(spec.min_count is None for spec in self.specs):
            return None
        return [default if s.min_count is None else s.min_count for s in self.specs]

    @property
    def node_only(self) -> list[bool]:
        """Per template: its features are node features only (``edges=false``)."""
        return [not spec.edges for spec in self.specs]

    @property
    def base_columns(self) -> list[str]:
        """The columns the templates read (``w``, input columns, attribute families)."""
        return sorted({p.column for p in self.attributes.values()})

    def columns(
        self,
        base: dict[str, list[Value]],
        doc_bounds: list[tuple[int, int]],
        flag_off: Value = None,
    ) -> dict[str, FactorColumn]:
        """Every attribute column [N] from the base columns [N] (``base["w"]``: the tokens),
        as distinct values and their tokens (``extract.FactorColumn``)."""
        done: dict[str, FactorColumn] = {}
        factored = {name: FactorColumn.of(base[name]) for name in self.base_columns}
        for name, part in self.attributes.items():
            column = factored[part.column]
            for k, op in enumerate(part.ops):
                step = render(part.column, part.ops[: k + 1])
                if step not in done:
                    done[step] = _apply(op, column, doc_bounds, flag_off)
                column = done[step]
            done[name] = column
        return {name: done[name] for name in self.attributes}


def _apply(op, column: FactorColumn, doc_bounds, flag_off: Value) -> FactorColumn:
    if op.kind == "fn":
        return apply_function(op.arg, column, doc_bounds, flag_off)
    n = op.arg
    return column.map((lambda v: v[:n]) if op.kind == "head" else (lambda v: v[-n:]))
