"""Φ^g·α^g of n candidate labelings of one document, compiled: the families of
``features/non_local`` (their definitions and references are there) counted candidate by
candidate and weighted, without the CSR rows of ``NonLocalFeatures.vectorize``.

What the candidates share is computed once (``string_ids``): the string of every span [s, s+l)
as an id, equal ids for equal token strings, for every length l up to the longest mention, by
sorting (length l's ids rank the pairs (id of [s, s+l-1), token s+l-1)); the occurrences of
each string are a run of the sorted positions.  Then, per candidate (``candidate_score``):

    mentions     the maximal IOB2 spans (s, e, c) of the labels (``MentionBatch``'s rule: a
                 mention starts at B-X, or at I-X after another class or O)
    N[g, c]      the mentions of string g and class c
    phrase       sum over strings of N_c N_d (c < d) and N_c (N_c - 1) / 2 (c = d), and, per
                 mention, the occurrences of its string with no labeled token (c | O)
    subphrase    per mention, the mentions of class d whose string properly contains its own:
                 sup[u, d] counts, for each distinct proper substring u of a mention of class
                 d, one (``MentionBatch.sup``)
    tokmaj       per labeled token, the classes of the other labeled tokens of the same word
    entmaj       per mention, the classes of the other mentions of its string
    supmaj       per mention, sup[u, :]
    conj         chains of consecutive mentions linked by ",", "and", "or", ", and", ", or" in
                 one sentence, with an "and"/"or" link: the unordered pairs of their classes

maj(V) is the most frequent class of V, a tie going to the mention's own class, else to the
first class (``majority.count_majorities``).  A feature's count times its weight (``weights``
[6 K1 K1] by code, 0 where the vocabulary has none) summed in float64.  ``best_candidate``
scores the n'-best list of one window of a document (its tokens' ``compare`` ids: equal ids,
equal strings; ``connector`` ids: 0 other, 1 ",", 2 "and", 3 "or", lower-cased,
``notation.CONNECTORS``).  The count of each code
equals ``vectorized.candidate_codes`` (tests/test_compiled_tagging.py checks them).
"""

from __future__ import annotations

import numpy as np
from numba import njit

PHRASE, SUBPHRASE, TOKMAJ, ENTMAJ, SUPMAJ, CONJ = range(6)  # notation.FAMILIES' order
AND_OR = 2
COMMA, AND, OR = 1, 2, 3  # connector ids


@njit(cache=True, nogil=True)
def string_ids(tok, T, longest):  # pragma: no cover - jit
    """(ids [longest, T]: ids[l - 1, s] the string id of [s, s + l), -1 past the end;
    occurrence starts sorted by string [longest, T], and each id's first index in them and its
    count, [longest * T] each).  Ids of length l lie in [(l - 1) T, l T)."""
    ids = np.full((longest, T), -1, dtype=np.int32)
    occ = np.zeros((longest, T), dtype=np.int32)
    first = np.zeros(longest * T, dtype=np.int32)
    count = np.zeros(longest * T, dtype=np.int32)
    keys = np.empty(T, dtype=np.int64)
    for l in range(1, longest + 1):
        n = T - l + 1
        if n <= 0:
            break
        for s in range(n):
            if l == 1:
                keys[s] = tok[s]
            else:  # (the rank of [s, s + l - 1), the last token)
                keys[s] = (ids[l - 2, s] - (l - 2) * T) * (T + 1) + tok[s + l - 1]
        order = np.argsort(keys[:n], kind="mergesort")
        rank = -1
        for p in range(n):
            s = order[p]
            if p == 0 or keys[s] != keys[order[p - 1]]:
                rank += 1
                first[(l - 1) * T + rank] = p
            g = (l - 1) * T + rank
            ids[l - 1, s] = g
            count[g] += 1
            occ[l - 1, p] = s
    return ids, occ, first, count


@njit(cache=True, nogil=True)
def _majority(votes, own, K1):  # pragma: no cover - jit
    """The majority class of votes[1..K] (0: no vote), a tie to ``own``, else the first."""
    best = 0.5
    arg = 0
    for c in range(1, K1):
        v = votes[c] + (0.5 if c == own else 0.0)
        if v > best:
            best = v
            arg = c
    return arg


@njit(cache=True, nogil=True)
def _code(family, c, d, K1):  # pragma: no cover - jit
    return (family * K1 + c) * K1 + d


@njit(cache=True, nogil=True)
def candidate_score(path, T, doc, model, work):  # pragma: no cover - jit
    """Φ^g·α^g of one candidate ``path`` [T] (label ids).  ``doc`` = (words [T] ids of the
    compared token strings, sentence [T], conn1 [T + 1], conn2 [T + 1] the connector kinds
    after each position (``DocumentIndex``'s), the ``string_ids`` tables); ``model`` =
    (label_class [L], label_begin [L], weights [6 K1 K1], enabled [6] families); ``work``:
    scratch arrays (``scratch``) of at least T mentions."""
    words, sentence, conn1, conn2, ids, occ, first, count = doc
    label_class, label_begin, weights, enabled = model
    ms, me, mc, mg, slot, N, sup, tokN, mark, touched, votes, chain_counts = work
    K1 = N.shape[1]
    longest = ids.shape[0]
    # the mentions
    M = 0
    for t in range(T):
        c = label_class[path[t]]
        if c == 0:
            continue
        if t == 0 or label_begin[path[t]] or label_class[path[t - 1]] != c:
            ms[M], mc[M] = t, c
            M += 1
        me[M - 1] = t + 1
    # N[k, c], sup[k, c] of the k-th string met (slot[g] = k; column 0 of N: all mentions)
    n_touched = 0
    for m in range(M):
        g = ids[me[m] - ms[m] - 1, ms[m]]
        if slot[g] < 0:
            slot[g] = n_touched
            touched[n_touched] = g
            n_touched += 1
        k = slot[g]
        mg[m] = k
        N[k, 0] += 1
        N[k, mc[m]] += 1
    total = 0.0
    if enabled[PHRASE]:
        for k in range(n_touched):
            g = touched[k]
            for c in range(1, K1):
                nc = N[k, c]
                if nc == 0:
                    continue
                total += weights[_code(PHRASE, c, c, K1)] * (nc * (nc - 1) // 2)
                for d in range(c + 1, K1):
                    total += weights[_code(PHRASE, c, d, K1)] * (nc * N[k, d])
            # occurrences of the string with no labeled token: c | O for each mention
            length = g // T + 1
            free = 0
            for p in range(first[g], first[g] + count[g]):
                s = occ[length - 1, p]
                labeled = False
                for t in range(s, s + length):
                    if label_class[path[t]] > 0:
                        labeled = True
                        break
                if not labeled:
                    free += 1
            if free:
                for c in range(1, K1):
                    total += weights[_code(PHRASE, c, 0, K1)] * (N[k, c] * free)
    if enabled[SUBPHRASE] or enabled[SUPMAJ]:
        # sup[u, d]: mentions of class d whose string properly contains string u (u a mention's)
        for m in range(M):
            size = me[m] - ms[m]
            stamp = m + 1
            for l in range(1, min(size, longest + 1)):
                for a in range(ms[m], me[m] - l + 1):
                    u = ids[l - 1, a]
                    if slot[u] >= 0 and mark[u] != stamp:  # a mention's string
                        mark[u] = stamp
                        sup[slot[u], mc[m]] += 1
        for m in range(M):
            k, c = mg[m], mc[m]
            any_vote = False
            for d in range(1, K1):
                v = sup[k, d]
                votes[d] = v
                if v:
                    any_vote = True
                    if enabled[SUBPHRASE]:
                        total += weights[_code(SUBPHRASE, c, d, K1)] * v
            if enabled[SUPMAJ] and any_vote:
                total += weights[_code(SUPMAJ, c, _majority(votes, c, K1), K1)]
    if enabled[ENTMAJ]:
        for m in range(M):
            k, c = mg[m], mc[m]
            any_vote = False
            for d in range(1, K1):
                votes[d] = N[k, d] - (1 if d == c else 0)
                any_vote = any_vote or votes[d] > 0
            if any_vote:
                total += weights[_code(ENTMAJ, c, _majority(votes, c, K1), K1)]
    if enabled[TOKMAJ]:  # over the mentions' tokens only
        for m in range(M):
            for t in range(ms[m], me[m]):
                tokN[words[t], mc[m]] += 1
        for m in range(M):
            c = mc[m]
            for t in range(ms[m], me[m]):
                any_vote = False
                for d in range(1, K1):
                    votes[d] = tokN[words[t], d] - (1 if d == c else 0)
                    any_vote = any_vote or votes[d] > 0
                if any_vote:
                    total += weights[_code(TOKMAJ, c, _majority(votes, c, K1), K1)]
        for m in range(M):
            for t in range(ms[m], me[m]):
                tokN[words[t], mc[m]] = 0
    if enabled[CONJ] and M > 1:
        chain_counts[:] = 0
        chain_counts[mc[0]] += 1
        linked_and_or = False
        for m in range(1, M + 1):
            kind = 0
            if m < M:
                e, s2 = me[m - 1], ms[m]
                gap = s2 - e
                if gap == 1:
                    kind = conn1[e]
                elif gap == 2:
                    kind = conn2[e]
                if sentence[e - 1] != sentence[s2]:
                    kind = 0
            if kind:
                linked_and_or = linked_and_or or kind == AND_OR
                chain_counts[mc[m]] += 1
                continue
            if linked_and_or:  # the chain that ends here
                for c in range(1, K1):
                    nc = chain_counts[c]
                    if nc == 0:
                        continue
                    total += weights[_code(CONJ, c, c, K1)] * (nc * (nc - 1) // 2)
                    for d in range(c + 1, K1):
                        total += weights[_code(CONJ, c, d, K1)] * (nc * chain_counts[d])
            chain_counts[:] = 0
            linked_and_or = False
            if m < M:
                chain_counts[mc[m]] += 1
    # reset what this candidate wrote
    for k in range(n_touched):
        g = touched[k]
        slot[g] = -1
        mark[g] = 0
        for d in range(K1):
            N[k, d] = 0
            sup[k, d] = 0
    return total


@njit(cache=True, nogil=True)
def scratch(T, longest, K1):  # pragma: no cover - jit
    """The ``work`` arrays of ``candidate_score`` for a document of T tokens."""
    G = max(longest, 1) * T
    return (
        np.zeros(T, np.int64),  # mention starts
        np.zeros(T, np.int64),  # ends
        np.zeros(T, np.int64),  # classes
        np.zeros(T, np.int64),  # slots of their strings
        np.full(G, -1, np.int32),  # string id -> slot
        np.zeros((T, K1), np.int64),  # N by slot (column 0: all mentions)
        np.zeros((T, K1), np.int64),  # sup by slot
        np.zeros((T, K1), np.int64),  # token class counts by word id
        np.zeros(G, np.int32),  # marks
        np.zeros(T, np.int64),  # strings touched
        np.zeros(K1, np.float64),  # votes
        np.zeros(K1, np.int64),  # class counts of a chain
    )


@njit(cache=True, nogil=True)
def longest_mention(paths, k, T, label_class, label_begin):  # pragma: no cover - jit
    """The longest mention of the candidates paths[:k, :T]."""
    best = 0
    for r in range(k):
        run = 0
        for t in range(T):
            c = label_class[paths[r, t]]
            if c == 0:
                run = 0
                continue
            if t == 0 or label_begin[paths[r, t]] or label_class[paths[r, t - 1]] != c:
                run = 0
            run += 1
            best = max(best, run)
    return best


@njit(cache=True, nogil=True)
def local_ids(values, T):  # pragma: no cover - jit
    """values[:T] renumbered 0..V-1 (equal values, equal numbers), in order of size."""
    order = np.argsort(values[:T], kind="mergesort")
    out = np.empty(T, dtype=np.int64)
    rank = -1
    for p in range(T):
        if p == 0 or values[order[p]] != values[order[p - 1]]:
            rank += 1
        out[order[p]] = rank
    return out


@njit(cache=True, nogil=True)
def window_document(compare, connector, sentence, t0, t1):  # pragma: no cover - jit
    """(words, sentence, conn1, conn2) of the window [t0, t1) for ``candidate_score``: local word
    ids, sentence ids, and the connector kind of the one and of the two tokens after each
    position (1: ",", 2: "and", "or", ", and", ", or"; 0: none)."""
    T = t1 - t0
    words = local_ids(compare[t0:t1], T)
    conn1 = np.zeros(T + 1, dtype=np.int64)
    conn2 = np.zeros(T + 1, dtype=np.int64)
    for t in range(T):
        c = connector[t0 + t]
        conn1[t] = 1 if c == COMMA else (2 if c == AND or c == OR else 0)
        if t + 1 < T and c == COMMA:
            d = connector[t0 + t + 1]
            conn2[t] = 2 if d == AND or d == OR else 0
    return words, sentence[t0:t1].astype(np.int64), conn1, conn2


@njit(cache=True, nogil=True)
def best_candidate(paths, found, local, t0, t1, text, model):  # pragma: no cover - jit
    """The index of the candidate of paths[:found, :T] (the window [t0, t1) of the tokens of
    ``text`` = (compare, connector, sentence) [N] ids) of the highest local[r] + Φ^g·α^g, the
    first on ties."""
    T = t1 - t0
    if found <= 1:
        return 0
    label_class, label_begin = model[0], model[1]
    longest = max(longest_mention(paths, found, T, label_class, label_begin), 1)
    words, sentence, conn1, conn2 = window_document(text[0], text[1], text[2], t0, t1)
    doc = (words, sentence, conn1, conn2) + string_ids(words, T, longest)
    work = scratch(T, longest, int(label_class.max()) + 1)
    best, best_total = 0, -np.inf
    for r in range(found):
        total = local[r] + candidate_score(paths[r], T, doc, model, work)
        if total > best_total:
            best_total = total
            best = r
    return best
