"""Tag a file with a trained model (``structperc-tag``): the command line of
``inference.files.TagJob``, whose settings are ``conf/predict.yaml``'s.

    python -m structperc.predict model=RUN_DIR input=test.txt output=out.txt
    python -m structperc.predict model=RUN_DIR input=tokens.txt output=out.txt 'columns=[token]'
    cat news.txt | structperc-tag model=RUN_DIR input=- output=- input_format=text \\
        output_format=jsonl > out.jsonl

Input and output formats (CoNLL columns, a column map, the model's own corpus format, plain
text; the columns with the prediction, or JSON lines of entities with character offsets) are
``inference/formats.py``'s; text streams through, its output written as it is tagged.  With gold
tags it prints conlleval's scores (a plain tagging model's: token accuracy), on standard error
when the output is standard output, as the log is.  Under ``torchrun`` (``torchrun --standalone
--nproc-per-node=N -m structperc.predict ...``) each rank tags a consecutive block of the
documents and rank 0 writes the output in the input's order.

Failures are one line on standard error and exit status 2 (a missing ``model=``, ``input=`` or
``output=``: the usage line too); Ctrl-C prints ``structperc-tag: interrupted``, status 130
(``HYDRA_FULL_ERROR=1``: the tracebacks).  The output file is written whole or not at all.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import hydra
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.errors import OverrideParseException
from omegaconf import DictConfig, OmegaConf

from structperc.cli import (
    config_dir,
    fail_cleanly,
    require_settings,
    run_entry_point,
    usage_error,
)
from structperc.distributed import SERIAL, Group
from structperc.inference.files import TagJob, checked_settings
from structperc.io import STDIO

log = logging.getLogger("structperc.predict")

PROGRAM = "structperc-tag"
USAGE = "model=RUN_DIR input=FILE|- output=FILE|- [key=value ...]  (--help: every setting)"
REQUIRED = ("model", "input", "output")


def tag_file(model_dir: str | Path, input_path: str | Path, output_path: str | Path, **settings):
    """Tag ``input_path`` into ``output_path`` with the model of ``model_dir``: ``settings`` are
    ``conf/predict.yaml``'s other keys (``inference.files.TagJob``); the scores where the input
    has gold tags, else None."""
    return TagJob.of(
        {**settings, "model": model_dir, "input": input_path, "output": output_path}
    ).run()


def check_arguments(args: list[str]) -> None:
    """Each ``key=value`` argument sets a key of ``conf/predict.yaml`` (or Hydra's ``hydra.*``):
    otherwise the usage line and one error line naming the argument (as for a missing setting),
    not Hydra's report of several lines and status 1.  A command line with flags (``--help``,
    ``--cfg job``, ...) is Hydra's to read."""
    if any(arg.startswith("-") for arg in args):
        return
    keys = set(OmegaConf.load(Path(config_dir()) / "predict.yaml")) - {"defaults", "hydra"}
    parser = OverridesParser.create()
    for arg in args:
        try:
            (override,) = parser.parse_overrides([arg])
        except OverrideParseException as err:
            reason = str(err).strip().splitlines()[0]
            usage_error(PROGRAM, USAGE, f"{arg!r} is not a setting key=value ({reason})")
        key = override.key_or_group
        if override.is_delete():
            usage_error(PROGRAM, USAGE, f"{arg!r}: settings are not deleted (key=null unsets one)")
        if key.split(".")[0] != "hydra" and key not in keys:
            usage_error(PROGRAM, USAGE, f"unknown setting {key}= in {arg!r}")


@hydra.main(version_base="1.3", config_path=config_dir(), config_name="predict")
def tag_main(cfg: DictConfig) -> None:
    """Hydra's job: ``tag_file`` with the settings of ``conf/predict.yaml``."""
    require_settings(PROGRAM, USAGE, [k for k in REQUIRED if OmegaConf.is_missing(cfg, k)])
    group = SERIAL
    try:
        s = checked_settings(OmegaConf.to_container(cfg))
        group = Group.from_environment("auto", s["device"])
        scores = TagJob.of({**s, "device": group.device_of(s["device"])}).run(group)
    except (ValueError, OSError) as err:
        fail_cleanly(PROGRAM, err)
    finally:
        group.close()
    if not group.is_main:
        return
    to_stdout = str(cfg.output) == STDIO  # then the scores go to stderr, with the log
    log.info("wrote %s", "<stdout>" if to_stdout else cfg.output)
    if scores is not None:
        print(scores.format(), file=sys.stderr if to_stdout else sys.stdout)


def main() -> None:
    """``structperc-tag``: the command line (``sys.argv``) through Hydra; Ctrl-C: one line."""
    check_arguments(sys.argv[1:])
    run_entry_point(PROGRAM, tag_main)


if __name__ == "__main__":
    main()
