"""The bench's markdown pages, rendered by Jinja2 from their JSON: ``templates/*.md.j2``.

A page is a template; what it shows is read from the results as the scripts wrote them, and the
few numbers the pages derive (medians, ratios, the loads) are computed here or in the template.
Every section of ``bench.py`` has a template of its name with two macros: ``glance(s, i)``, its
rows in the page's at-a-glance table (``i``: its number), and ``body(s)``, its own part of the
page, both of the section's results ``s``.  Rendering only: no torch, no structperc, so
``bench.py``, ``profile_bench.py``, ``gpu_bench.py`` and ``main_job.py`` all use it.
"""

from __future__ import annotations

import statistics
from pathlib import Path

import jinja2
from common import ratio

TEMPLATES = Path(__file__).resolve().parent / "templates"


def fmt(v: float | None) -> str:
    """A measurement for a table: 1,025 / 26.8 / 2.00 / 0.409; "n/a" for None."""
    if v is None:
        return "n/a"
    if abs(v) >= 100:
        return f"{v:,.0f}"
    return f"{v:#.3g}" if abs(v) < 10 else f"{v:.1f}"


def ratio_words(r: float | None, kind: str) -> str:
    """A ratio as a reader takes it: "2.46× faster", "0.72×, i.e. 1.38× slower", "0.87× (less)"
    (``kind``: "time" or "rate", "memory", else a count)."""
    if r is None:
        return "n/a"
    text = f"{r:.2f}×"
    if kind in ("time", "rate"):
        text += " faster" if r >= 1 else f", i.e. {1 / r:.2f}× slower"
    elif kind == "memory":
        text += " (more)" if r >= 1 else " (less)"
    return text


def num(v: float | None, spec: str = ".2f") -> str:
    """``v`` formatted by ``spec``; "n/a" for None."""
    return "n/a" if v is None else format(v, spec)


def pct(part: float, whole: float) -> str:
    """``part`` in percent of ``whole``: "12.3%"; "n/a" when ``whole`` is zero."""
    return f"{100 * part / whole:.1f}%" if whole else "n/a"


def code(text: str | None) -> str:
    """A name as code in a table cell (``|`` would end the cell); "–" for None."""
    return "–" if text is None else f"`{text.replace('|', '/')}`"


def max_load(machine: dict, *parts: dict) -> float:
    """The highest load average (1 minute) at the start or end of a run and of its ``parts``."""
    loads = [machine["loadavg_start"][0], machine.get("loadavg_end", machine["loadavg_start"])[0]]
    loads += [p[k][0] for p in parts for k in ("loadavg_start", "loadavg_end")]
    return max(loads)


def find(rows: list[dict], **fields) -> dict:
    """The first of ``rows`` whose ``fields`` have the values given."""
    return next(r for r in rows if all(r.get(k) == v for k, v in fields.items()))


ENV = jinja2.Environment(
    loader=jinja2.FileSystemLoader(TEMPLATES),
    undefined=jinja2.StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
    keep_trailing_newline=True,
    autoescape=False,
)
ENV.filters.update(
    f=format, fmt=fmt, num=num, words=ratio_words, pct=pct, code=code, median=statistics.median
)
ENV.globals.update(find=find, max_load=max_load, ratio=ratio, zip=zip)


def page(template: str, **context) -> str:
    """The markdown of ``templates/<template>`` given ``context``."""
    return ENV.get_template(template).render(**context)
