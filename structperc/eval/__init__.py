"""Evaluation: conlleval.pl's chunk precision, recall and F1, in memory and on written files."""

from structperc.eval.chunks import ChunkScores, TypeScores, chunk_spans, evaluate, sentences
from structperc.eval.files import evaluate_file, read_tag_columns

__all__ = [
    "ChunkScores",
    "TypeScores",
    "chunk_spans",
    "evaluate",
    "evaluate_file",
    "read_tag_columns",
    "sentences",
]
