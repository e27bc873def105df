"""The merges of Brown clustering with m active clusters, compiled (numba).

Liang (2005, "Semi-supervised learning for natural language", MIT M.Eng. thesis, §3.3): the
words enter in order of frequency, each as a new cluster; whenever m + 1 clusters are active,
the pair whose merge loses the least average mutual information (AMI) of adjacent classes is
merged; when every word is in, the m clusters are merged down to one, which makes the tree whose
paths are the words' classes.  Only the active clusters' bigram counts are kept (an
(m+1) × (m+1) matrix), so the time is O(V m²) and the memory O(m²), whatever the vocabulary.

Notation, for active clusters c, d (the same as the slow reference in the tests):

    n(c, d)   bigram count of a word of c followed by a word of d (among the words entered)
    n(c)      unigram count of c (fixed per word, Liang's p(c): adding a word leaves the other
              clusters' terms unchanged)
    f(c, d) = n(c, d) log [ n(c, d) / (n(c) n(d)) ]        (0 when n(c, d) = 0)
    AMI  = Σ_{c,d} f(c, d) / N + const,

the constant being the same before and after any merge (a merge keeps Σ n(c, d)), so the loss of
merging a and b is

    L(a, b) = Σ_{e ≠ a,b} g(a, b; e) + f(a,a) + f(a,b) + f(b,a) + f(b,b) − f(ab, ab)
    g(c, d; e) = f(c,e) + f(e,c) + f(d,e) + f(e,d) − f(cd, e) − f(e, cd)

(``cd`` the union of c and d).  L is kept for every active pair and corrected in O(1) a pair
when a cluster enters (+ g(c, d; s)) or a merge turns a and b into ab (− g(c, d; a) − g(c, d; b)
+ g(c, d; ab)); the pairs of the new cluster are computed whole, O(m) each.  Ties go to the
first pair in (row, column) order, so the result is a function of the counts alone.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange


@njit(cache=True, inline="always")
def _f(n, log_a, log_b):
    if n <= 0.0:
        return 0.0
    return n * (np.log(n) - log_a - log_b)


@njit(cache=True, inline="always")
def _g(n2, q, logc, c, d, e, log_cd):
    """g(c, d; e): the terms of e with c and d apart, less those with their union."""
    out = q[c, e] + q[e, c] + q[d, e] + q[e, d]
    out -= _f(n2[c, e] + n2[d, e], log_cd, logc[e])
    out -= _f(n2[e, c] + n2[e, d], logc[e], log_cd)
    return out


@njit(cache=True)
def _whole_loss(n2, q, log_pair, logc, active, terms, a, b):
    """L(a, b) from its definition, O(m): ``terms[x]`` is the sum of x's terms f(x, e) and
    f(e, x) over the active e (f(x, x) once), so those of a or b are
    terms[a] + terms[b] − f(a, b) − f(b, a); the merged ones are summed here."""
    log_ab = log_pair[a, b]
    total = terms[a] + terms[b] - q[a, b] - q[b, a]
    total -= _f(n2[a, a] + n2[a, b] + n2[b, a] + n2[b, b], log_ab, log_ab)
    for e in range(n2.shape[0]):
        if active[e] and e != a and e != b:
            total -= _f(n2[a, e] + n2[b, e], log_ab, logc[e])
            total -= _f(n2[e, a] + n2[e, b], logc[e], log_ab)
    return total


@njit(cache=True)
def _terms(q, active):
    """terms[x] = Σ_e f(x, e) + f(e, x) − f(x, x) over the active e (see _whole_loss)."""
    slots = q.shape[0]
    out = np.zeros(slots)
    for x in range(slots):
        if active[x]:
            total = -q[x, x]
            for e in range(slots):
                if active[e]:
                    total += q[x, e] + q[e, x]
            out[x] = total
    return out


@njit(cache=True)
def _fill_q(n2, q, cnt, log_pair, logc, active, s):
    """f(s, e) and f(e, s) for every active e (row and column s of q), and the logs of the
    pairs' counts log(n(s) + n(e))."""
    for e in range(n2.shape[0]):
        if active[e]:
            q[s, e] = _f(n2[s, e], logc[s], logc[e])
            q[e, s] = _f(n2[e, s], logc[e], logc[s])
            log_pair[s, e] = log_pair[e, s] = np.log(cnt[s] + cnt[e])


@njit(cache=True, parallel=True)
def _add_to_losses(n2, q, log_pair, logc, loss, active, e, sign):
    """loss[c, d] += sign · g(c, d; e) for every active pair c < d apart from e."""
    slots = n2.shape[0]
    for c in prange(slots):
        if not active[c] or c == e:
            continue
        for d in range(c + 1, slots):
            if active[d] and d != e:
                loss[c, d] += sign * _g(n2, q, logc, c, d, e, log_pair[c, d])


@njit(cache=True, parallel=True)
def _losses_of(n2, q, log_pair, logc, loss, active, s):
    """loss[s, d] (or [d, s]) computed whole for every active d."""
    slots = n2.shape[0]
    terms = _terms(q, active)
    for d in prange(slots):
        if active[d] and d != s:
            value = _whole_loss(n2, q, log_pair, logc, active, terms, s, d)
            if s < d:
                loss[s, d] = value
            else:
                loss[d, s] = value


@njit(cache=True)
def _best_pair(loss, active):
    slots = loss.shape[0]
    best, best_a, best_b = np.inf, -1, -1
    for c in range(slots):
        if active[c]:
            for d in range(c + 1, slots):
                if active[d] and loss[c, d] < best:
                    best, best_a, best_b = loss[c, d], c, d
    return best_a, best_b


@njit(cache=True)
def _enter(word, slot, counts, right, left, state):
    """Word ``word`` enters as a cluster of its own in the free ``slot``."""
    word_slot, n2, q, log_pair, cnt, logc, loss, active = state
    r_ptr, r_idx, r_cnt = right
    l_ptr, l_idx, l_cnt = left
    word_slot[word] = slot
    n2[slot, :] = 0.0
    n2[:, slot] = 0.0
    for k in range(r_ptr[word], r_ptr[word + 1]):  # word followed by v (v = word included)
        v = r_idx[k]
        if word_slot[v] >= 0:
            n2[slot, word_slot[v]] += r_cnt[k]
    for k in range(l_ptr[word], l_ptr[word + 1]):  # u followed by word
        u = l_idx[k]
        if u != word and word_slot[u] >= 0:
            n2[word_slot[u], slot] += l_cnt[k]
    cnt[slot] = counts[word]
    logc[slot] = np.log(counts[word])
    active[slot] = True
    _fill_q(n2, q, cnt, log_pair, logc, active, slot)
    _add_to_losses(n2, q, log_pair, logc, loss, active, slot, 1.0)
    _losses_of(n2, q, log_pair, logc, loss, active, slot)


@njit(cache=True)
def _merge(a, b, state):
    """Cluster b joins cluster a (a < b); slot b is freed."""
    word_slot, n2, q, log_pair, cnt, logc, loss, active = state
    # − g(c, d; a) − g(c, d; b) for the pairs apart from a and b (those of a are computed whole
    # below, those of b are dropped)
    active[b] = False
    _add_to_losses(n2, q, log_pair, logc, loss, active, a, -1.0)
    active[a], active[b] = False, True
    _add_to_losses(n2, q, log_pair, logc, loss, active, b, -1.0)
    active[a] = True
    n2[a, :] += n2[b, :]
    n2[:, a] += n2[:, b]
    n2[b, :] = 0.0
    n2[:, b] = 0.0
    q[b, :] = 0.0
    q[:, b] = 0.0
    active[b] = False
    cnt[a] += cnt[b]
    logc[a] = np.log(cnt[a])
    _fill_q(n2, q, cnt, log_pair, logc, active, a)
    _add_to_losses(n2, q, log_pair, logc, loss, active, a, 1.0)
    _losses_of(n2, q, log_pair, logc, loss, active, a)
    for w in range(word_slot.shape[0]):
        if word_slot[w] == b:
            word_slot[w] = a


@njit(cache=True)
def run_words(counts, right, left, m, first, stop, state):
    """Words of ranks ``first`` .. ``stop - 1`` enter, one at a time, each followed by the best
    merge once m + 1 clusters are active.

    Args:
        counts: (V,) the words' counts, most frequent first.
        right, left: CSR tables (ptr (V+1,), word (E,), count (E,)) of the words that follow and
            precede each word (``brown.bigram_tables``).
        state: (word_slot (V,), n2, q, log_pair (m+1, m+1), cnt, logc (m+1,), loss (m+1, m+1),
            active (m+1,)), kept between calls; word_slot[w] is w's cluster, -1 before it enters.
    """
    active = state[7]
    for word in range(first, stop):
        slot = -1
        for s in range(m + 1):
            if not active[s]:
                slot = s
                break
        _enter(word, slot, counts, right, left, state)
        if active.sum() > m:
            a, b = _best_pair(state[6], active)
            _merge(a, b, state)


@njit(cache=True)
def merge_all(state, merges):
    """The last phase: merge the active clusters down to one; merges[k] = (a, b), b into a."""
    for k in range(merges.shape[0]):
        a, b = _best_pair(state[6], state[7])
        merges[k, 0], merges[k, 1] = a, b
        _merge(a, b, state)
