"""Tasks: one run end to end, each a module that registers itself (``registry.py``).

A task module defines one frozen settings dataclass, a builder (the composed config, lent by
``run.ComposedConfig`` -> the settings) and a driver ((settings, run folder, process group) ->
results), registered with ``@task(name, build=..., headline=..., distributed=...)``;
``conf/task/<name>.yaml`` names the module (``module:``), which ``run.py`` imports.  A new task
is those two files, inside the package or outside it.

    tagging.py     sequence labeling (CoNLL-2003 NER): one labeler (``labeler.py``)
    joint.py       joint POS tagging + NP chunking with the label-chunk structure (Shimizu & Haas)
    cascade.py     linear-chain POS tagger and NP chunker, and their cascade (the joint baselines)
    rerank.py      a first model's jackknifed n-best lists and a ranker (Collins; Kazama 6.3)
    tagchunk.py    a POS tagger and a chunker on CoNLL-2000: the column tagger (``loading.py``)

What they share, through functions (no task calls another's driver):

    registry.py    name -> builder + driver, the headline metric, whether it runs distributed
    inputs.py      what builders read in common: the corpus, local features and their cache key
    training.py    the train-and-report skeleton (``TrainingRun``, ``RunSettings``,
                   ``ModelSettings``, ``EpochReporter``), and the training loop's names for the
                   tasks
    report.py      what they write after training: results.json, conlleval's scores
    labeler.py     a sequence labeler trained, scored and saved (tagging, tagchunk's chains)
    structure.py   ``labeler_structure``: a new labeler's structure and weights
    warm_start.py  a saved labeler continued on new data (``trainer.init_from``)
    completion.py  partially labelled training data completed by a saved model
                   (``trainer.complete_with``)
    pos_np.py      the joint and cascade tasks' measures, names and prediction file
    jackknife.py   the rerank task's first models, one fold of the jackknife a job, their lists
"""

from structperc.tasks.registry import Task, lookup, registered, task

__all__ = ["Task", "lookup", "registered", "task"]
