"""The report page of a run (``structperc-report run=RUN``): one self-contained HTML file with
the settings, the scores and error classes per type, the learning curves, the top features, the
error patterns and every error marked and explained.

    run_folder.py   what a run folder holds (results, settings, TensorBoard scalars)
    predictions.py  the written dev/test predictions
    sections.py     the page's sections; html.py and plots.py their HTML and inline SVG figures
    build.py        ``build_report``: the page of a run folder
    browser.py      headless Chromium, for the page's test
    cli.py          the command line
"""

from structperc.report.build import build_report
from structperc.report.run_folder import RunFolder, read_run

__all__ = ["RunFolder", "build_report", "read_run"]
