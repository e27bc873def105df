"""The console scripts ``structperc-train``, ``structperc-tag``, ``structperc-serve``,
``structperc-explain`` and ``structperc-report`` (pyproject.toml).

Each imports its entry point (``structperc.run``, ``structperc.predict``) inside
``cli.interrupts_cleanly``: importing torch takes seconds, and Ctrl-C meanwhile ends in one line
and status 130 as it does later.  This module imports the standard library and ``cli`` only until
then.  ``python -m structperc.run`` and ``python -m structperc.predict`` catch Ctrl-C from their
``main`` on.
"""

from __future__ import annotations

from structperc.cli import interrupts_cleanly


def train() -> None:
    """``structperc-train``: ``structperc.run.main``."""
    with interrupts_cleanly("structperc-train"):
        from structperc.run import main

        main()


def tag() -> None:
    """``structperc-tag``: ``structperc.predict.main``."""
    with interrupts_cleanly("structperc-tag"):
        from structperc.predict import main

        main()


def serve() -> None:
    """``structperc-serve``: ``structperc.serve.main``."""
    with interrupts_cleanly("structperc-serve"):
        from structperc.serve import main

        main()


def explain() -> None:
    """``structperc-explain``: ``structperc.explaining.main``."""
    with interrupts_cleanly("structperc-explain"):
        from structperc.explaining import main

        main()


def report() -> None:
    """``structperc-report``: ``structperc.report.cli.main``."""
    with interrupts_cleanly("structperc-report"):
        from structperc.report.cli import main

        main()
