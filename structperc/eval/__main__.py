"""``python -m structperc.eval FILE...``: conlleval.pl's report of written prediction files."""

from __future__ import annotations

import argparse
import os
import sys

from structperc.eval.files import evaluate_file


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m structperc.eval",
        description=(
            "Score prediction files as conlleval.pl does: space-separated columns whose last two "
            "are the gold and the predicted tag, sentences separated by blank lines "
            "(the dev.pred.txt and test.pred.txt of a run folder)."
        ),
    )
    parser.add_argument("files", nargs="+", help="prediction files")
    args = parser.parse_args(argv)
    try:
        return _report(args.files)
    except BrokenPipeError:  # `... | head`: the reader went away, which is not an error
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


def _report(files: list[str]) -> int:
    for k, path in enumerate(files):
        try:
            scores = evaluate_file(path)
        except (OSError, ValueError) as e:
            print(f"python -m structperc.eval: {e}", file=sys.stderr)
            return 2
        if len(files) > 1:
            print(("\n" if k else "") + f"{path}:")
        print(scores.format())
    return 0


if __name__ == "__main__":
    sys.exit(main())
