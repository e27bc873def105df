"""HTML pieces of the report page: escaped text, tables, sections, and the page around them.

The page is one self-contained file: its style and its one small script (the error list's
filter) are inline, its figures inline SVG; it loads nothing from anywhere.
"""

from __future__ import annotations

from html import escape

STYLE = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 0; color: #222;
       background: #fafafa; font-size: 14px; }
header { background: #1f3b57; color: #fff; padding: 14px 24px; }
header h1 { margin: 0; font-size: 20px; } header p { margin: 4px 0 0; opacity: .85; }
nav { padding: 8px 24px; background: #e8eef4; position: sticky; top: 0; z-index: 2; }
nav a { margin-right: 14px; color: #1f3b57; text-decoration: none; font-size: 13px; }
main { padding: 8px 24px 40px; max-width: 1200px; }
section { background: #fff; border: 1px solid #ddd; border-radius: 6px; margin: 16px 0;
          padding: 6px 16px 14px; }
h2 { font-size: 17px; border-bottom: 1px solid #eee; padding-bottom: 4px; }
h3 { font-size: 14px; margin: 14px 0 6px; }
table { border-collapse: collapse; margin: 6px 0; font-size: 13px; }
th, td { border: 1px solid #ddd; padding: 3px 8px; text-align: right; vertical-align: top; }
th { background: #f0f3f6; } td.l, th.l { text-align: left; }
.grid { display: flex; flex-wrap: wrap; gap: 18px; align-items: flex-start; }
.small { font-size: 12px; color: #555; }
pre { background: #f6f6f6; padding: 8px; overflow-x: auto; font-size: 12px;
      white-space: pre-wrap; }
code { font-size: 12px; }
.sent { line-height: 2.4; font-size: 14px; }
.tok { padding: 1px 2px; }
.g { border-bottom: 3px solid #2a9d4b; }
.p { background: #fde2c8; }
.tag { font-size: 10px; vertical-align: super; margin-right: 2px; }
.gt { color: #2a9d4b; } .pt { color: #c0570c; }
.focus { outline: 1px dashed #444; }
.err { border-top: 1px solid #eee; padding: 6px 0; }
.pos { color: #1a7f37; } .neg { color: #b3261e; }
svg { max-width: 100%; height: auto; }
"""

FILTER_SCRIPT = """
function filterErrors() {
  var kind = document.getElementById('kind').value;
  var type = document.getElementById('etype').value;
  var shown = 0;
  document.querySelectorAll('#error-list .err').forEach(function (e) {
    var ok = (kind === '' || e.dataset.kind === kind) && (type === '' || e.dataset.type === type);
    e.style.display = ok ? '' : 'none';
    if (ok) { shown += 1; }
  });
  document.getElementById('shown').textContent = shown;
}
"""


def text(value) -> str:
    return escape(str(value))


def number(value, digits: int = 2) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return text(value)


def table(header: list[str], rows: list[list], left: int = 1, raw: bool = False) -> str:
    """A table; the first ``left`` columns left-aligned; cells escaped unless ``raw``."""

    def cell(tag: str, k: int, v) -> str:
        cls = ' class="l"' if k < left else ""
        body = v if raw and isinstance(v, str) else number(v)
        return f"<{tag}{cls}>{body}</{tag}>"

    head = "".join(cell("th", k, text(h) if raw else h) for k, h in enumerate(header))
    body = "".join(
        "<tr>" + "".join(cell("td", k, v) for k, v in enumerate(row)) + "</tr>" for row in rows
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def section(key: str, title: str, body: str) -> str:
    return f'<section id="{key}" data-section="{key}"><h2>{text(title)}</h2>{body}</section>'


def page(title: str, subtitle: str, sections: list[tuple[str, str, str]]) -> str:
    """The whole page: a header, a bar of links to the sections, the sections."""
    links = "".join(f'<a href="#{k}">{text(t)}</a>' for k, t, _ in sections)
    body = "".join(section(k, t, b) for k, t, b in sections)
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{text(title)}</title><style>{STYLE}</style>"
        f"<script>{FILTER_SCRIPT}</script></head><body>"
        f"<header><h1>{text(title)}</h1><p>{text(subtitle)}</p></header>"
        f"<nav>{links}</nav><main>{body}</main></body></html>\n"
    )
