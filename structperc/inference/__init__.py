"""Inference: a trained model back from its run folder, and tagging with it.

    loading.py          a run folder's model as a structure and its features (``load_tagger``)
    column_tagger.py    the column tagger: POS and chunk columns for input that lacks them
    tagger.py           ``Tagger``: tokens, documents, text and files in; labels, entities,
                        explanations out
    explainer.py        ``Tagger.explain``: runner-ups, margins, the features between them
    compiled_*.py, template_tables.py, token_codes.py, token_batch.py, gazetteer_matcher.py,
    labelings.py, workers.py
                        the compiled path (numba kernels of ``structperc.native``): word codes,
                        template score tables, windows of long documents, threads
    formats.py, files.py
                        input and output formats, ``TagJob`` (``structperc-tag``'s settings),
                        streaming text through the tagger
    service.py, model_card.py
                        ``structperc-serve``'s application (Starlette) and its ``/model`` card

The package sits below ``structperc.tasks``: training carries a column tagger through it, and
``predict``, ``serve`` and the scikit-learn face load models through it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from structperc.lazy import lazy_attributes

# Loaded on first use: training imports ``column_tagger`` and ``loading`` alone, without the
# compiled path's kernels (numba: ~0.3 s and ~90 MB of a process that never tags)
_WHERE = {
    "ColumnTagger": "structperc.inference.column_tagger",
    "TaggerSettings": "structperc.inference.files",
    "TagJob": "structperc.inference.files",
    "load_tagger": "structperc.inference.loading",
    "MissingColumns": "structperc.inference.tagger",
    "Tagger": "structperc.inference.tagger",
}
__all__ = ["ColumnTagger", "MissingColumns", "TagJob", "Tagger", "TaggerSettings", "load_tagger"]

if TYPE_CHECKING:
    from structperc.inference.column_tagger import ColumnTagger
    from structperc.inference.files import TaggerSettings, TagJob
    from structperc.inference.loading import load_tagger
    from structperc.inference.tagger import MissingColumns, Tagger


__getattr__, __dir__ = lazy_attributes(globals(), _WHERE, __all__)
