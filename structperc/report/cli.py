"""``structperc-report``: the report page of a run folder.

    structperc-report run=runs/main                      # writes runs/main/report.html
    structperc-report run=RUN output=page.html split=dev limit=200 top=15

One self-contained HTML file (inline style, one small inline script, figures as inline SVG:
it loads nothing, and opens without a server): the run's settings and data, dev and test
precision, recall and F1 per type, the error classes per type, the learning curves, the top
features per label, the most frequent error patterns and the errors of ``split`` (the first
``limit``) with their spans marked and their explanations, and the timing and memory
(``report/build.py``).  The page is written whole or not at all; failures are one line and
status 2.
"""

from __future__ import annotations

import sys
from pathlib import Path

from structperc.cli import fail_cleanly, key_value_settings
from structperc.io import atomic_write_text

PROGRAM = "structperc-report"
USAGE = "run=RUN_DIR [output=RUN_DIR/report.html] [split=test|dev] [limit=1000] [top=10]"
DEFAULTS = {"run": ..., "output": None, "split": "test", "limit": 1000, "top": 10}


def main(args: list[str] | None = None) -> None:
    """The command line (``sys.argv``)."""
    given = sys.argv[1:] if args is None else args
    s = key_value_settings(PROGRAM, USAGE, given, DEFAULTS, __doc__)
    output = Path(s["output"] or Path(s["run"]) / "report.html")
    try:
        from structperc.report.build import build_report

        html = build_report(s["run"], split=s["split"], limit=s["limit"], top=s["top"])
        atomic_write_text(output, html)
    except (ValueError, OSError) as err:
        fail_cleanly(PROGRAM, err)
    print(f"{PROGRAM}: wrote {output}", file=sys.stderr)


if __name__ == "__main__":
    main()
