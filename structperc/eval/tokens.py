"""Token-level scores of a plain tagging task (POS, morphological tags): labels without chunk
prefixes, so no chunks to count.

With the tokens' gold labels g_i and predicted labels p_i, in percent:

    accuracy       = 100 * #{i : p_i = g_i} / #tokens          (0 when there are no tokens)
    precision(l)   = 100 * #{i : p_i = g_i = l} / #{i : p_i = l}
    recall(l)      = 100 * #{i : p_i = g_i = l} / #{i : g_i = l}
    F1(l)          = 2 P R / (P + R)
    macro F1       = the mean of F1(l) over the labels found in gold or predictions

(0 for an empty denominator, as in ``chunks.py``).  Accuracy is the figure POS taggers report
(e.g. Collins 2002a, the CoNLL-2000 POS column); the per-label scores show which tags it misses.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field

from structperc.eval.chunks import TypeScores, _check_lengths, _percent

__all__ = ["TokenScores", "token_scores"]


@dataclass(frozen=True)
class TokenScores:
    """Accuracy and per-label precision, recall and F1 (percent) of a plain tagging task."""

    accuracy: float
    macro_f1: float
    n_tokens: int
    n_correct: int
    per_label: dict[str, TypeScores] = field(default_factory=dict)

    def to_dict(self) -> dict:
        """A JSON-serialisable dict (``per_label`` becomes a dict of dicts)."""
        return asdict(self)

    def format(self) -> str:
        """A table in the manner of conlleval.pl's: accuracy, then one line per label."""
        lines = [f"processed {self.n_tokens} tokens; correct: {self.n_correct}."]
        if self.n_tokens:
            lines.append(f"accuracy: {self.accuracy:6.2f}%; macro FB1: {self.macro_f1:6.2f}")
        lines += [s.line(name) for name, s in self.per_label.items()]
        return "\n".join(lines)


def token_scores(gold: Sequence[Sequence[str]], pred: Sequence[Sequence[str]]) -> TokenScores:
    """The scores of predicted label sequences against gold ones (one pair per document)."""
    _check_lengths(gold, pred)
    n_gold: Counter = Counter()
    n_pred: Counter = Counter()
    n_right: Counter = Counter()
    for g_doc, p_doc in zip(gold, pred, strict=True):
        n_gold.update(g_doc)
        n_pred.update(p_doc)
        n_right.update(g for g, p in zip(g_doc, p_doc, strict=True) if g == p)
    per_label = {
        label: TypeScores.of(n_right[label], n_pred[label], n_gold[label])
        for label in sorted(n_gold.keys() | n_pred.keys())
    }
    tokens, right = sum(n_gold.values()), sum(n_right.values())
    macro = sum(s.f1 for s in per_label.values()) / len(per_label) if per_label else 0.0
    return TokenScores(
        accuracy=_percent(right, tokens),
        macro_f1=macro,
        n_tokens=tokens,
        n_correct=right,
        per_label=per_label,
    )
