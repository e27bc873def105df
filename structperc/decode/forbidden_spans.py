"""Forbidden entity spans, exactly: the chain over an augmented label set.

A forbidden span (s, e, X) says the labeling must not contain the entity of type X over tokens
s..e-1, read as conlleval reads IOB2 (``data.tags.spans``): the entity starts at s (``B-X``, or
``I-X`` after a label that is not of type X, or at the first token), every token up to e-1 is
``I-X``, and token e is not ``I-X`` (or e is the length).  Unlike a token's allowed labels this
is no product over the tokens, so no offset of the node scores expresses it: the chain's
labels are augmented instead, with a few *matched* labels that track a forbidden start.

For every forbidden start (s, X) (the group of the spans that start at s with type X, ends E)
two labels are added: ``MB`` (``B-X`` at s) and ``MI`` (``I-X`` of an entity of type X that
started at s: at s itself after a non-X label, and at s+1 .. max(E)-1).  Every labeling of the
original chain has exactly one labeling of the augmented chain (its matched labels are where it
is inside an entity that started at a forbidden start), with the same score, and the moves that
would complete a forbidden entity are -inf:

    at t = s:        B-X only as MB; I-X after a non-X label only as MI (they start an entity)
    s < t < max E:   MI only after MB or MI; after MB or MI, I-X only as MI, and any other
                     label (the entity [s, t) ends) only when t is not in E
    t = max E:       after MB or MI, only I-X (the entity goes on past every forbidden end)
    end n:           MB or MI at n - 1 only when n is not in E.

So the labelings of finite score are exactly the allowed ones, each once: Viterbi, the n-best
and the partition function of the augmented potentials are those of the allowed labelings
(torch-struct's "vary the potentials, not the DP"), and mapping the labels back (``orig``)
gives the original labeling.  Cost: L + 2K labels for K forbidden starts.
"""

from __future__ import annotations

import torch
from torch import Tensor

from structperc.decode.nbest import nbest
from structperc.decode.viterbi import viterbi

Span = tuple[int, int, int, int]  # (start, end exclusive, id of B-X, id of I-X; -1: no such label)


def groups_of(spans: list[Span]) -> list[tuple[int, int, int, set[int]]]:
    """The forbidden starts (start, B id, I id, the ends) of one sequence's spans."""
    grouped: dict[tuple[int, int, int], set[int]] = {}
    for s, e, b, i in spans:
        if e <= s:
            raise ValueError(f"a forbidden span must hold a token: got ({s}, {e})")
        grouped.setdefault((s, b, i), set()).add(e)
    return [(s, b, i, ends) for (s, b, i), ends in sorted(grouped.items())]


def augment(potentials: Tensor, lengths: Tensor, spans: list[list[Span]]) -> tuple[Tensor, Tensor]:
    """(augmented potentials [B, T, L + 2K, L + 2K], orig [B, L + 2K] long): the chain whose
    finite-scoring labelings are the allowed ones (module docstring); ``orig[b, a]`` is the
    original label of augmented label a (an unused one: 0, never reachable).

    potentials: [B, T, L, L] (from, to), row 0 of t = 0 the start scores; lengths [B];
    spans: per sequence, its forbidden spans (start, end, B id, I id)."""
    B, T, L, _ = potentials.shape
    per_seq = [groups_of(s) for s in spans]
    K = max((len(g) for g in per_seq), default=0)
    La = L + 2 * K
    orig = torch.zeros((B, La), dtype=torch.long, device=potentials.device)
    orig[:, :L] = torch.arange(L, device=potentials.device)
    ok = torch.ones((B, T, La, La), dtype=torch.bool)  # [b, t, from, to]
    for b, groups in enumerate(per_seq):
        used = torch.zeros(La, dtype=torch.bool)
        used[: L + 2 * len(groups)] = True
        ok[b, :, ~used, :] = False  # augmented labels this sequence does not need
        ok[b, :, :, ~used] = False
        for g, (_, bx, ix, _) in enumerate(groups):
            orig[b, L + 2 * g], orig[b, L + 2 * g + 1] = max(bx, 0), max(ix, 0)
        labels_b = orig[b].cpu()
        for g, (s, bx, ix, ends) in enumerate(groups):
            is_x = used & ((labels_b == bx) | (labels_b == ix))  # labels of type X
            moves = GroupMoves(s, bx, ix, ends, L + 2 * g, L + 2 * g + 1, is_x)
            moves.apply(ok[b], int(lengths[b]))
    ok = ok.to(potentials.device)
    index = orig.view(B, 1, La, 1).expand(B, T, La, L)
    rows = potentials.gather(2, index)  # [B, T, La(from), L(to)]
    full = rows.gather(3, orig.view(B, 1, 1, La).expand(B, T, La, La))  # [B, T, La, La]
    return full.masked_fill(~ok, float("-inf")), orig


class GroupMoves:
    """The moves one forbidden start (s, X) rules out (the module docstring's table): MB and MI
    its matched labels, ``is_x`` [La] the labels of type X (matched ones of other starts too)."""

    def __init__(self, s, bx, ix, ends, mb, mi, is_x):
        self.s, self.bx, self.ix, self.ends, self.mb, self.mi = s, bx, ix, ends, mb, mi
        self.is_x = is_x
        self.matched = torch.zeros_like(is_x)
        self.matched[[mb, mi]] = True

    def apply(self, ok: Tensor, n: int) -> None:
        """Rule the moves out of ok [T, La, La] (from, to) for a sequence of length n."""
        s, bx, ix, mb, mi, matched = self.s, self.bx, self.ix, self.mb, self.mi, self.matched
        T = ok.shape[0]
        top = max(self.ends)
        keep_mb = torch.zeros(T, dtype=torch.bool)
        keep_mi = torch.zeros(T, dtype=torch.bool)
        if s < n:  # (a span past the sequence forbids nothing)
            keep_mb[s] = bx >= 0
            keep_mi[s : min(top, T)] = ix >= 0
        ok[~keep_mb, :, mb] = False  # MB only at s, MI only at s .. top - 1
        ok[~keep_mi, :, mi] = False
        if s >= n:
            return
        if bx >= 0:
            ok[s, :, bx] = False  # B-X at s starts the entity: only as MB
        if ix >= 0:
            if s == 0:
                ok[0, :, ix] = False  # I-X first starts it too: only as MI
            else:
                ok[s, ~self.is_x, ix] = False  # after a label not of type X: only as MI
                ok[s, self.is_x, mi] = False  # after one of type X it goes on: not MI
        for t in range(s + 1, min(top, T - 1) + 1):
            ok[t, ~matched, mi] = False  # MI only after MB or MI
            others = torch.ones(ok.shape[1], dtype=torch.bool)
            if t < top:
                if ix >= 0:
                    ok[t, matched, ix] = False  # the entity goes on as MI
                if t in self.ends:  # it would end here, [s, t): only going on is allowed
                    others[mi] = False
                    ok[t, mb, others] = False
                    ok[t, mi, others] = False
            else:  # t = top, a forbidden end: the entity must go on, as plain I-X
                if ix >= 0:
                    others[ix] = False
                ok[t, mb, others] = False
                ok[t, mi, others] = False
        if n in self.ends:  # the sequence ends inside the entity [s, n)
            ok[n - 1, :, mb] = False
            ok[n - 1, :, mi] = False


def restore(paths: Tensor, orig: Tensor) -> Tensor:
    """Original labels [B, ..., T] of augmented paths (-1 stays -1); orig [B, La]."""
    B = paths.shape[0]
    flat = paths.reshape(B, -1)
    out = orig.gather(1, flat.clamp(min=0).long()).masked_fill(flat < 0, -1)
    return out.view(paths.shape).to(paths.dtype)


def viterbi_forbidding(
    potentials: Tensor, lengths: Tensor, spans: list[list[Span]]
) -> tuple[Tensor, Tensor]:
    """The best allowed labelings [B, T] (-1 past each length) and their scores [B]."""
    augmented, orig = augment(potentials, lengths, spans)
    paths, scores = viterbi(augmented, lengths)
    return restore(paths, orig), scores


def nbest_forbidding(
    potentials: Tensor, lengths: Tensor, spans: list[list[Span]], n: int
) -> tuple[Tensor, Tensor]:
    """The n best allowed labelings [B, n, T] and their scores [B, n] (``nbest``'s padding)."""
    augmented, orig = augment(potentials, lengths, spans)
    paths, scores = nbest(augmented, lengths, n)
    return restore(paths, orig), scores


def fold_marginals(marginals: Tensor, orig: Tensor, num_labels: int) -> Tensor:
    """Node marginals [B, T, L] of the original labels from those of the augmented ones
    [B, T, La]: the matched labels' mass added to their original labels."""
    B, T, La = marginals.shape
    out = marginals.new_zeros(B, T, num_labels)
    return out.scatter_add_(2, orig.view(B, 1, La).expand(B, T, La), marginals)
