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

Failures are one line on standard error: bad input, a bad model, an output that is the input or
cannot be written print what is wrong, naming the file (and line), and exit with status 2; a
missing ``model=``, ``input=`` or ``output=`` prints the usage line too; Ctrl-C prints
``structperc-tag: interrupted`` and exits with status 130 (``HYDRA_FULL_ERROR=1``: the
tracebacks).  The output file is written whole or not at all (a temporary file renamed into
place).  Plain text without words gives an empty output; an empty CoNLL file is an error.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import hydra
import torch
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
from structperc.inference.files import TagJob
from structperc.io import STDIO

log = logging.getLogger("structperc.predict")

PROGRAM = "structperc-tag"
USAGE = "model=RUN_DIR input=FILE|- output=FILE|- [key=value ...]  (--help: every setting)"
REQUIRED = ("model", "input", "output")
# the settings that are not text, and what they must be (``settings``)
WHOLE_NUMBERS, SWITCHES, LISTS = (
    ("batch_size", "n_test", "window", "threads"),
    ("evaluate",),
    ("columns",),
)
KINDS = {
    "batch_size": "a whole number",
    "n_test": "a whole number or null",
    "window": "a whole number",
    "threads": "a whole number",
    "evaluate": "true or false",
    "columns": "a list of column names, e.g. [token,_,ner]",
}


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


def settings(cfg: DictConfig) -> dict:
    """The settings of ``cfg`` as plain values: text settings as strings (``model=3`` is the
    folder "3"), ValueError naming a setting of the wrong kind (``batch_size=x``, a device
    torch does not know, ...)."""
    out = OmegaConf.to_container(cfg)
    for key, value in out.items():
        if value is None:
            continue
        if key in WHOLE_NUMBERS:
            ok = isinstance(value, int) and not isinstance(value, bool)
        elif key in SWITCHES:
            ok = isinstance(value, bool)
        elif key in LISTS:
            ok = isinstance(value, list) and all(isinstance(v, str) for v in value)
        else:
            ok = not isinstance(value, list | dict)
            out[key] = str(value)
        if not ok:
            raise ValueError(f"{key}={value!r}: expected {KINDS.get(key, 'text')}")
    try:
        torch.device(out["device"])
    except (RuntimeError, ValueError) as err:
        raise ValueError(f"device={out['device']}: {str(err).splitlines()[0]}") from None
    return out


@hydra.main(version_base="1.3", config_path=config_dir(), config_name="predict")
def tag_main(cfg: DictConfig) -> None:
    """Hydra's job: ``tag_file`` with the settings of ``conf/predict.yaml``."""
    require_settings(PROGRAM, USAGE, [k for k in REQUIRED if OmegaConf.is_missing(cfg, k)])
    group = SERIAL
    try:
        s = settings(cfg)
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
