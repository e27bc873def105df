"""Section 7 of ``make bench``: the averaged-perceptron POS tagger of the tagchunk task (Penn
Treebank tags, 44 of them in CoNLL-2000's training sentences) against CRFsuite's averaged
perceptron (python-crfsuite, "ap") on the same attributes: feature extraction, epoch time,
Viterbi decoding, memory, test accuracy.

What section 1 (``perceptron_bench.py``) measures for NER on CoNLL-2003, with its workers, rounds
and tables run with ``task: pos`` (``templates/perceptron.md.j2`` says what each row includes):

- data (``common.load_pos_corpus``): CoNLL-2000 sentences in Penn Treebank form, the training
  sentences minus the last ``dev_sentences`` (those are dev), tags = the POS column, as
  ``structperc.tasks.tagchunk.run_tagchunk`` trains its tagger;
- features (``common.tagchunk_pos_settings``): ``task.pos_attributes``, ``pos_bigrams`` and
  ``pos_trigrams`` of ``conf/task/tagchunk.yaml``, no gazetteer, and ``features.edges: false``
  of ``conf/experiment/conll00_tagchunk.yaml``, read from the Hydra config when the section
  starts; so structperc has node features and a transition matrix, CRFsuite's model structure;
- quality: token accuracy on test instead of chunk F1.

It saves no model: the shared model of sections 2-4 and 6 is section 1's (NER).  Run through
``bench.py`` (``--only pos``).
"""

from __future__ import annotations

import perceptron_bench
from common import tagchunk_pos_settings

DEFAULTS = {"epochs": 5, "repeats": 3, "decode_repeats": 3, "budget_s": 300.0}
QUICK = {"epochs": 2, "repeats": 1, "decode_repeats": 3, "budget_s": 300.0}


def run(cfg: dict) -> dict:
    """Rounds of section 1's two workers on the POS task (``cfg``: the bench's common settings +
    ``DEFAULTS``; ``--set pos.features=...`` or ``pos.dev_sentences=...`` win over the config
    files).  ``model_dir`` is dropped: this section writes no shared model."""
    settings = tagchunk_pos_settings()
    cfg = {k: v for k, v in cfg.items() if k not in ("model_dir", "save_model")}
    return perceptron_bench.run({**settings, **cfg, "task": "pos"})
