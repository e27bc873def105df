"""Task drivers: one run end to end, from plain objects (``run.py`` builds them from the config).

    tagging.py   sequence labeling (CoNLL-2003 NER): the chain, or the document rescoring
                 structure for learners with non-local features (Kazama & Torisawa 2007)
    joint.py     joint POS tagging + NP chunking with the label-chunk structure (Shimizu & Haas)
    cascade.py   linear-chain POS tagger and NP chunker, and their cascade (the joint baselines)
    rerank.py    reranking n-best lists with global features (Collins 2002; Kazama & Torisawa)
    jackknife.py its first models, one fold of the jackknife a job, and their n-best lists
    report.py    what they all write: TensorBoard curves, the log, results.json

A task is chosen by the Hydra group ``task`` (``conf/task/*.yaml``).
"""
