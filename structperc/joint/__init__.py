"""Joint POS tagging and NP chunking with label-chunk structures (Shimizu & Haas 2006).

A label-chunk structure segments a sentence into chunks, tags every chunk (NP or not) and every
token (one of five collapsed POS tags); its score is the sum of the scores of its parts, and the
best structure is found exactly by an O(n^2) dynamic program (Figure 1 of the paper).

    structure.py   the structure, its parts, conversion from/to CoNLL-2000 columns, Hamming loss
    features.py    token type t_q (Table 5), the lexicalized features of each part type (Table 6)
    weights.py     one EmbeddingBag table per part type; potentials; Phi(y*) - Phi(y')
    dp.py          the exact DP, batched over sentences, chunk starts and tags
    reference.py   Figure 1 as plain loops, brute-force enumeration, a part-by-part scorer
    learn.py       voted perceptron (Alg. 4.1/4.2) and max-margin update (Alg. 4.3), for chains too
    train.py       the online loop of the joint model (with the first-epoch back-off) and decoding
    cascade.py     linear-chain POS tagger and NP chunker baselines, and their cascade
    experiment.py  a run end to end: results.json, TensorBoard, predictions
    entry.py       Hydra config -> the calls above (dispatched from ``structperc.run``)
"""
