"""``Tagger``, the Python API of a trained model, where users import it from
(``structperc.inference.tagger``)."""

from structperc.inference.tagger import MissingColumns, Tagger

__all__ = ["MissingColumns", "Tagger"]
