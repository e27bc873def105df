"""Word classes learned from unlabeled text, as token attributes of the feature pipeline.

A linear tagger sees a rare word only through its spelling; a class shared with frequent words
(``Peugeot`` with ``Renault``, ``Fiat``) lets the weights of the frequent ones speak for it.
Two kinds of classes are built here from the data folder's ``unlabeled/`` text, tokenised as
CoNLL-2003 is (``tokens``):

- k-means clusters of word2vec vectors at several granularities (Mikolov et al. 2013; Guo et al.
  2014): ``vectors.py``, attributes ``wc<k>``;
- Brown clusters, bit-string paths in a merge tree, used as prefixes of several lengths (Brown
  et al. 1992; Liang 2005; Turian et al. 2010): ``brown.py`` (the merges compiled in
  ``brown_merges.py``), attributes ``bc<p>``.

``store.py`` keeps each built family as a small file in a cache folder keyed by its settings
and the inputs' sha256s; ``table.WordClasses`` turns tokens into attribute columns.  The feature
pipeline builds them from ``features.word_classes`` (conf/features/kazama_wordclasses.yaml),
and ``python -m structperc.wordclasses`` from the command line.
"""

from structperc.wordclasses.store import WordClassSettings, identity, load_word_classes
from structperc.wordclasses.table import WordClasses
from structperc.wordclasses.tokens import conll_tokens

__all__ = ["WordClassSettings", "WordClasses", "conll_tokens", "identity", "load_word_classes"]
