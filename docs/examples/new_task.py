"""A new task: each word's most frequent training tag, a baseline, run end to end.

A task is two files: a module that registers it (a frozen settings dataclass, a builder from
the composed config, a driver that trains into the run folder and returns the results) and its
``conf/task/<name>.yaml``, which names the module.  ``python -m structperc.run task=<name>``
(and ``structperc.train``) imports the module, finds the task in the registry and runs it.  The
module may live outside the package, and the yaml in a config folder of your own
(``hydra.searchpath``).

Run it with ``python docs/examples/new_task.py``: it writes the yaml into a temporary config
folder and runs the task on synthetic documents.
"""

from __future__ import annotations

import tempfile
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from structperc.distributed import SERIAL, Group
from structperc.tasks import task
from structperc.tasks.inputs import load_data
from structperc.tasks.training import TrainingRun

# conf/task/most_frequent.yaml: the task's name, its module (in a project of yours, e.g.
# ``module: my_package.most_frequent``; here this file's), and the task's own settings
TASK_YAML = """\
name: most_frequent
module: {module}    # the module that registers the task (the run imports it)
unseen: O           # the tag of a word never seen in training
"""


@dataclass(frozen=True)
class MostFrequentSettings:
    """What the driver needs: the corpus's splits, the tag of unseen words, the flat settings
    the run records (TensorBoard's HPARAMS, results.json)."""

    corpus: dict
    unseen: str
    hparams: dict = field(default_factory=dict)


def most_frequent_settings(config) -> MostFrequentSettings:
    """The builder: the composed config (``run.ComposedConfig``) -> the settings."""
    return MostFrequentSettings(load_data(config), config.cfg.task.unseen, config.hparams())


@task("most_frequent", build=most_frequent_settings, headline=("dev.accuracy",))
def run_most_frequent(s: MostFrequentSettings, out_dir: Path, group: Group = SERIAL) -> dict:
    """The driver: count, tag dev and test, and write results.json into ``out_dir``."""
    counts: dict[str, Counter] = defaultdict(Counter)
    for doc in s.corpus["train"]:
        for word, tag in zip(doc.tokens, doc.tags, strict=True):
            counts[word][tag] += 1
    results = {"task": "most_frequent", "hparams": s.hparams}
    for split in ("dev", "test"):
        pairs = [
            (tag, counts[word].most_common(1)[0][0] if word in counts else s.unseen)
            for doc in s.corpus[split]
            for word, tag in zip(doc.tokens, doc.tags, strict=True)
        ]
        results[split] = {"accuracy": 100.0 * sum(g == p for g, p in pairs) / len(pairs)}
    final = {f"{split}_accuracy": results[split]["accuracy"] for split in ("dev", "test")}
    return TrainingRun(out_dir, group).finish(results, final)


def main(folder: Path) -> dict:
    """The task run on synthetic CoNLL-2003 files in ``folder``: its results."""
    import structperc
    from structperc.data.conll import write_conll
    from structperc.data.synthetic import make_corpus

    (folder / "conf" / "task").mkdir(parents=True)
    module = run_most_frequent.__module__  # (``__main__`` when this file runs as a script)
    (folder / "conf" / "task" / "most_frequent.yaml").write_text(TASK_YAML.format(module=module))
    for seed, (split, n) in enumerate({"train": 20, "dev": 5, "test": 5}.items(), start=1):
        write_conll(folder / f"{split}.txt", make_corpus(n, seed=seed))
    run = structperc.train(
        f"hydra.searchpath=[file://{folder / 'conf'}]",
        "task=most_frequent",
        "data=columns",
        f"data.train={folder / 'train.txt'}",
        f"data.dev={folder / 'dev.txt'}",
        f"data.test={folder / 'test.txt'}",
        "data.columns=[token,pos,chunk,ner]",
        folder=folder / "run",
    )
    return run.results


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as tmp:
        results = main(Path(tmp))
    print(f"dev accuracy {results['dev']['accuracy']:.1f}, test {results['test']['accuracy']:.1f}")
