"""Token scores of a plain tagging task (``eval/tokens.py``) on a hand-counted example."""

from __future__ import annotations

import pytest

from structperc.eval.tokens import token_scores


def test_accuracy_and_per_label_scores_by_hand():
    gold = [["DT", "NN", "VBZ"], ["NN", "NN"]]
    pred = [["DT", "NN", "NN"], ["NN", "JJ"]]
    s = token_scores(gold, pred)
    assert (s.n_tokens, s.n_correct) == (5, 3) and s.accuracy == pytest.approx(60.0)
    nn = s.per_label["NN"]  # gold 3, predicted 3, right 2
    assert (nn.n_gold, nn.n_pred, nn.n_correct) == (3, 3, 2)
    assert nn.precision == pytest.approx(200 / 3) and nn.f1 == pytest.approx(200 / 3)
    assert s.per_label["VBZ"].recall == 0 and s.per_label["JJ"].precision == 0
    assert s.macro_f1 == pytest.approx((100 + 200 / 3 + 0 + 0) / 4)
    assert "accuracy:  60.00%" in s.format() and list(s.per_label) == ["DT", "JJ", "NN", "VBZ"]
    with pytest.raises(ValueError, match="documents"):
        token_scores(gold, pred[:1])
    assert token_scores([], []).accuracy == 0.0
