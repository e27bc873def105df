"""Evaluation: conlleval-equivalent chunk precision, recall and F1."""

from structperc.eval.chunks import ChunkScores, TypeScores, chunk_spans, evaluate

__all__ = ["ChunkScores", "TypeScores", "chunk_spans", "evaluate"]
