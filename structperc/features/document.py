"""Non-local (document-level) features Φ^g(x, y) of a candidate labeling, and their fast
vectorisation over the n-best candidates of a document.

Kazama & Torisawa (2007, §5) use non-local features "based on Finkel et al. (2005)": phrase
and sub-phrase consistency, their "majority" versions "as used in Krishnan and Manning (2006)",
and their own conjunction consistency.  The paper names the families and does not define them;
the definitions below are ours, written to follow the cited work in spirit.  Every feature is a
function of the tokens and of ONE candidate labeling y only, never of the gold labels, so it
can score any candidate.

**Notation.**  Tokens x_0 .. x_{T-1}; w_i = x_i, lower-cased when ``casefold``.  The mentions
M(y) are the maximal IOB2 spans m = (s, e, c) of y (``data.tags.spans``, the conlleval rule),
with class c = the entity type; "O" stands for "not an entity".  str(m) = (w_s .. w_{e-1}).
An *occurrence* of a token string u is any position p with (w_p .. w_{p+|u|-1}) = u.  Pairs of
classes in unordered pairs are written in alphabetical order.  A feature is the string
``<family>=<class>|<class>`` and Φ^g counts how often it fires.

**phrase** (phrase consistency; Finkel et al. 2005's label consistency of equal strings)
    (a) every unordered pair of distinct mentions {m, m'} with str(m) = str(m'):
        ``phrase=a|b`` with {a, b} = {c(m), c(m')};
    (b) every pair (mention m, occurrence p of str(m) all of whose tokens are labeled O):
        ``phrase=c(m)|O``.  Occurrences that are partly labeled are left to ``subphrase``.
    Example: "Jordan beat Jordan in Jordan" as B-PER O B-LOC O O -> phrase=LOC|PER,
    phrase=PER|O, phrase=LOC|O (the third "Jordan" is unlabeled).

**subphrase** (sub-phrase consistency)
    every ordered pair of mentions (m, m') with str(m) a proper contiguous sub-sequence of
    str(m'): ``subphrase=c(m)|c(m')`` (the class of the shorter one first).
    Example: "Bill Clinton said Clinton" as B-PER I-PER O B-PER -> subphrase=PER|PER.

**tokmaj** (token majority, Krishnan & Manning 2006)
    every token i inside a mention m: V_i = the classes of the *other* labeled positions j != i
    with w_j = w_i (one vote each); if V_i is not empty, ``tokmaj=c(m)|maj(V_i)``.
    Example: "Clinton ... Clinton ... Clinton" as B-PER, B-PER, B-ORG -> tokmaj=PER|PER twice
    (each PER sees one PER and one ORG: a tie, kept by its own class), tokmaj=ORG|PER once.

**entmaj** (entity majority)
    every mention m: V = the classes of the other mentions m' != m with str(m') = str(m);
    if V is not empty, ``entmaj=c(m)|maj(V)``.
    Example: "Jordan ... Jordan ... Jordan" as B-LOC, B-LOC, B-PER -> entmaj=LOC|LOC twice
    (each LOC sees LOC and PER: a tie, kept by its own class), entmaj=PER|LOC.

**supmaj** (super-entity majority)
    every mention m: V = the classes of the mentions m' whose string properly contains str(m);
    if V is not empty, ``supmaj=c(m)|maj(V)``.
    Example: "Bank of England ... England" as B-ORG I-ORG I-ORG ... B-LOC -> supmaj=LOC|ORG.

    maj(V) is the most frequent class of V; a tie goes to c(m) when c(m) is among the tied
    classes (as if m voted for itself), otherwise to the alphabetically first.

**conj** (conjunction consistency, Kazama & Torisawa 2007)
    two mentions consecutive in y (no mention between them) are *linked* when the tokens
    between them are exactly ",", "and", "or", ", and" or ", or" ("and"/"or" in any case) and
    both lie in one sentence; a *conjunction* is a maximal chain of linked mentions with at
    least one "and"/"or" link ("Paris , France" alone is not one).  Every unordered pair of
    mentions of a conjunction: ``conj=a|b``.
    Example: "in U.S. , EU , and Japan" as O B-LOC O B-ORG O O B-LOC -> conj=LOC|LOC,
    conj=LOC|ORG twice.

**Counts.**  Each unordered mention pair, each (mention, unlabeled occurrence) pair, each
mention token and each mention fires once, so k equal mentions give k(k-1)/2 phrase pairs.

**Vectorisation** (``NonLocalFeatures``).  With K entity classes every feature is a code
(family, c, c') in a closed space of 6 (K+1)^2 codes (88 reachable ones for CoNLL's K = 4), so
Φ^g of all n candidates is an integer matrix [n, codes] computed by NumPy operations over all
mentions of all candidates at once, never a Python loop over candidates or mentions:

    mentions       start/end masks of the [n, T] labels, ends by ``searchsorted``;
    N[c, r, s]     mentions of class c with string s in candidate r (one ``bincount``);
    same[d, i]     N[d, r_i, s_i], per mention i: the classes of its equal-string mentions;
    sup[d, i]      the same summed over the strings that properly contain s_i;
    pairs          out[r, c, d] = sum over the mentions i of (r, c) of same[d, i] (or sup[d, i]),
                   i.e. sum_s N_c N_d, minus the self-pairs on the diagonal, halved there;
    majorities     a running argmax over the K classes of vote vectors [K+1, M].

Class counts are class-major ([K+1, M]) because NumPy reduces five-wide rows slowly.  What the
candidates share is cached per document (``DocumentIndex``): the string id of every span, the
occurrences and sub-strings of every string, the connectors between positions.  Codes map to
feature ids through a small table; ``vectorize`` returns CSR (ids, offsets) for
``EmbeddingBag(G, 1, mode="sum")``, which scores all n candidates in one call.
``document_features`` and the six family functions are the slow, obviously correct reference
that the fast path is tested against.

Vocabularies (``vocabulary=``):
    "all"   every reachable code of the enabled families (default: the space is tiny and closed,
            and the penalties that matter, e.g. ``phrase=LOC|PER``, are rare in gold labelings);
    "gold"  the codes seen at least ``min_count`` times in the gold labelings given to ``fit``;
    "grow"  "gold", plus codes seen ``min_count`` times in candidates passed to
            ``vectorize(..., admit=True)``: new ids are appended (existing ids never move), so
            the caller pads its weight table with zero rows up to ``num_features``;
    "hash"  id = crc32(feature string) mod ``num_buckets``: no fitting, a fixed table size.

References: J. R. Finkel, T. Grenager, C. Manning (2005), Incorporating non-local information
into information extraction systems by Gibbs sampling, ACL.  V. Krishnan, C. D. Manning (2006),
An effective two-stage model for exploiting non-local dependencies in named entity recognition,
ACL-COLING.  J. Kazama, K. Torisawa (2007), A new perceptron algorithm for sequence labeling
with non-local features, EMNLP-CoNLL.
"""

from __future__ import annotations

import weakref
import zlib
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from itertools import combinations

import numpy as np
import torch
import torch.nn.functional as F

from structperc.data.document import Document
from structperc.data.tags import OUTSIDE, spans, split_tag

FAMILIES = ("phrase", "subphrase", "tokmaj", "entmaj", "supmaj", "conj")
VOCABULARIES = ("all", "gold", "grow", "hash")
CONNECTORS = {(",",): 1, ("and",): 2, ("or",): 2, (",", "and"): 2, (",", "or"): 2}
COMMA, AND_OR = 1, 2  # link kinds
Mention = tuple[int, int, str]


# ---------------------------------------------------------------------------------------------
# Reference definitions: one pure function per family, on strings.
# ---------------------------------------------------------------------------------------------
def feature(family: str, a: str, b: str) -> str:
    """The feature string ``family=a|b``."""
    return f"{family}={a}|{b}"


def pair(family: str, a: str, b: str) -> str:
    """The feature of an unordered pair of classes (alphabetical order)."""
    return feature(family, *sorted((a, b)))


def majority(votes: Counter, own: str) -> str:
    """The most frequent class of ``votes``; a tie goes to ``own``, else alphabetically first."""
    best = max(votes.values())
    tied = sorted(c for c, v in votes.items() if v == best)
    return own if own in tied else tied[0]


def occurrences(tokens: Sequence[str], string: Sequence[str]) -> list[int]:
    """Start positions p with tokens[p:p + len(string)] == string."""
    n, k = len(tokens), len(string)
    return [p for p in range(n - k + 1) if list(tokens[p : p + k]) == list(string)]


def contains(outer: Sequence[str], inner: Sequence[str]) -> bool:
    """Whether ``inner`` is a proper contiguous sub-sequence of ``outer``."""
    return len(inner) < len(outer) and bool(occurrences(outer, inner))


def _by_string(tokens: Sequence[str], mentions: Sequence[Mention]) -> dict[tuple, list[str]]:
    groups: dict[tuple, list[str]] = defaultdict(list)
    for s, e, c in mentions:
        groups[tuple(tokens[s:e])].append(c)
    return groups


def phrase_consistency(tokens: Sequence[str], mentions: Sequence[Mention]) -> Counter:
    """``phrase=a|b`` per pair of equal-string mentions, ``phrase=c|O`` per unlabeled copy."""
    out: Counter = Counter()
    labeled = np.zeros(len(tokens) + 1, dtype=bool)
    for s, e, _ in mentions:
        labeled[s:e] = True
    for string, classes in _by_string(tokens, mentions).items():
        for a, b in combinations(classes, 2):
            out[pair("phrase", a, b)] += 1
        free = sum(1 for p in occurrences(tokens, string) if not labeled[p : p + len(string)].any())
        for c in classes:
            if free:
                out[feature("phrase", c, OUTSIDE)] += free
    return out


def subphrase_consistency(tokens: Sequence[str], mentions: Sequence[Mention]) -> Counter:
    """``subphrase=c|c'`` per mention whose string lies properly inside another mention's."""
    out: Counter = Counter()
    for s, e, c in mentions:
        for s2, e2, c2 in mentions:
            if contains(tokens[s2:e2], tokens[s:e]):
                out[feature("subphrase", c, c2)] += 1
    return out


def token_majority(tokens: Sequence[str], mentions: Sequence[Mention]) -> Counter:
    """``tokmaj=c|maj`` per mention token: the majority class of the same token elsewhere."""
    out: Counter = Counter()
    cls = [OUTSIDE] * len(tokens)
    for s, e, c in mentions:
        cls[s:e] = [c] * (e - s)
    for s, e, c in mentions:
        for i in range(s, e):
            votes = Counter(cls[j] for j in range(len(tokens)) if j != i and tokens[j] == tokens[i])
            votes.pop(OUTSIDE, None)
            if votes:
                out[feature("tokmaj", c, majority(votes, c))] += 1
    return out


def entity_majority(tokens: Sequence[str], mentions: Sequence[Mention]) -> Counter:
    """``entmaj=c|maj`` per mention: the majority class of the other equal-string mentions."""
    out: Counter = Counter()
    for k, (s, e, c) in enumerate(mentions):
        votes = Counter(
            c2
            for k2, (s2, e2, c2) in enumerate(mentions)
            if k2 != k and tokens[s2:e2] == tokens[s:e]
        )
        if votes:
            out[feature("entmaj", c, majority(votes, c))] += 1
    return out


def superentity_majority(tokens: Sequence[str], mentions: Sequence[Mention]) -> Counter:
    """``supmaj=c|maj`` per mention: the majority class of the mentions containing its string."""
    out: Counter = Counter()
    for s, e, c in mentions:
        votes = Counter(c2 for s2, e2, c2 in mentions if contains(tokens[s2:e2], tokens[s:e]))
        if votes:
            out[feature("supmaj", c, majority(votes, c))] += 1
    return out


def link(tokens: Sequence[str], end: int, start: int, sentence: Sequence[int]) -> int:
    """The connector between a mention ending at ``end`` and one starting at ``start``.

    ``COMMA``, ``AND_OR`` or 0 (no link); ``sentence`` is the sentence id of every token.
    """
    gap = tuple(t.lower() for t in tokens[end:start])
    if sentence[end - 1] != sentence[start]:
        return 0
    return CONNECTORS.get(gap, 0)


def conjunction_consistency(
    tokens: Sequence[str], mentions: Sequence[Mention], sentence_starts: Sequence[int] = (0,)
) -> Counter:
    """``conj=a|b`` per pair of mentions of one "A , B and C" / "A or B" conjunction."""
    sentence = sentence_ids(len(tokens), sentence_starts)
    ordered = sorted(mentions)
    chains: list[tuple[list[str], bool]] = []
    for k, (s, _, c) in enumerate(ordered):
        kind = link(tokens, ordered[k - 1][1], s, sentence) if k else 0
        if kind:
            chains[-1][0].append(c)
            chains[-1] = (chains[-1][0], chains[-1][1] or kind == AND_OR)
        else:
            chains.append(([c], False))
    out: Counter = Counter()
    for classes, has_and_or in chains:
        if has_and_or:
            for a, b in combinations(classes, 2):
                out[pair("conj", a, b)] += 1
    return out


def sentence_ids(length: int, sentence_starts: Sequence[int]) -> np.ndarray:
    """[T] int64: the sentence of every token."""
    marks = np.zeros(length + 1, dtype=np.int64)
    marks[[s for s in sentence_starts if 0 < s < length]] = 1
    return np.cumsum(marks)[:length]


FAMILY_FUNCTIONS = {
    "phrase": phrase_consistency,
    "subphrase": subphrase_consistency,
    "tokmaj": token_majority,
    "entmaj": entity_majority,
    "supmaj": superentity_majority,
    "conj": conjunction_consistency,
}


def normalize(tokens: Sequence[str], casefold: bool) -> list[str]:
    """The token strings compared by the features (lower-cased when ``casefold``)."""
    return [t.lower() for t in tokens] if casefold else list(tokens)


def document_features(
    tokens: Sequence[str],
    labeling: Sequence[str] | Sequence[int],
    labels: Sequence[str] | None = None,
    families: Iterable[str] = FAMILIES,
    casefold: bool = False,
    sentence_starts: Sequence[int] = (0,),
) -> Counter:
    """Φ^g(x, y) of one candidate as a Counter of feature strings (the reference definition).

    ``labeling`` is IOB2 tag strings, or label ids when ``labels`` (the id -> tag list) is given.
    """
    tags = [labels[i] for i in labeling] if labels is not None else list(labeling)
    words = normalize(tokens, casefold)
    mentions = spans(tags)
    out: Counter = Counter()
    for name in _check_families(families):
        if name == "conj":
            out.update(conjunction_consistency(words, mentions, sentence_starts))
        else:
            out.update(FAMILY_FUNCTIONS[name](words, mentions))
    return out


def _check_families(families: Iterable[str]) -> tuple[str, ...]:
    chosen = tuple(families)
    unknown = set(chosen) - set(FAMILIES)
    if unknown:
        raise ValueError(f"unknown non-local families {sorted(unknown)}; known: {FAMILIES}")
    return tuple(f for f in FAMILIES if f in chosen)


# ---------------------------------------------------------------------------------------------
# The code space: (family, c, c') with classes 1..K and 0 = "O".
# ---------------------------------------------------------------------------------------------
UNORDERED = ("phrase", "conj")


def label_classes(labels: Sequence[str]) -> list[str]:
    """The entity classes of a label list, sorted (index 0 of the code space is "O")."""
    return sorted({split_tag(t)[1] for t in labels if t != OUTSIDE})


def reachable_codes(families: Sequence[str], num_classes: int) -> np.ndarray:
    """Sorted codes the enabled families can produce (``family * K1^2 + c * K1 + c'``)."""
    k1 = num_classes + 1
    out = []
    for name in families:
        f = FAMILIES.index(name)
        for c in range(1, k1):
            for d in range(1, k1):
                if name not in UNORDERED or c <= d:
                    out.append((f * k1 + c) * k1 + d)
            if name == "phrase":
                out.append((f * k1 + c) * k1)
    return np.array(sorted(out), dtype=np.int64)


def code_names(classes: Sequence[str]) -> list[str]:
    """The feature string of every code of the space (index = code)."""
    names = [OUTSIDE, *classes]
    return [feature(f, a, b) for f in FAMILIES for a in names for b in names]


# ---------------------------------------------------------------------------------------------
# Per-document cache: what all candidates of a document share.
# ---------------------------------------------------------------------------------------------
SHORT = 8  # spans shorter than this find their string id in a [T, SHORT] table


class DocumentIndex:
    """Token ids, connectors, sentences, and caches of span strings, occurrences, sub-strings.

    String ids are per document and never change; every cache only grows.
    """

    def __init__(self, tokens: Sequence[str], sentence_starts: Sequence[int], casefold: bool):
        words = normalize(tokens, casefold)
        self.length = T = len(words)
        ids: dict[str, int] = {}
        self.tok = np.fromiter((ids.setdefault(w, len(ids)) for w in words), np.int64, T)
        self.num_types = len(ids)
        low = [t.lower() for t in tokens] + [""]
        self.conn1 = np.array([CONNECTORS.get((w,), 0) for w in low[:T]] + [0], dtype=np.int64)
        self.conn2 = np.array(
            [CONNECTORS.get((low[i], low[i + 1]), 0) for i in range(T)] + [0], dtype=np.int64
        )
        self.sentence = sentence_ids(T, sentence_starts)
        self.strings: dict[tuple[int, ...], int] = {}  # token-id string -> string id
        self.string_of: list[tuple[int, ...]] = []
        self.short = np.full((T, SHORT), -1, dtype=np.int64)  # [s, e - s] -> string id
        self._long: dict[tuple[int, int], int] = {}
        self._occ: dict[int, np.ndarray] = {}
        self._subs: dict[int, tuple[int, ...]] = {}

    def _sid(self, string: tuple[int, ...]) -> int:
        sid = self.strings.get(string)
        if sid is None:
            sid = self.strings[string] = len(self.string_of)
            self.string_of.append(string)
        return sid

    def span(self, s: int, e: int) -> int:
        """String id of the span [s, e)."""
        if e - s < SHORT:
            sid = int(self.short[s, e - s])
            if sid < 0:
                sid = self.short[s, e - s] = self._sid(tuple(self.tok[s:e].tolist()))
            return sid
        if (s, e) not in self._long:
            self._long[s, e] = self._sid(tuple(self.tok[s:e].tolist()))
        return self._long[s, e]

    def spans(self, s: np.ndarray, e: np.ndarray) -> np.ndarray:
        """String ids [M] of the spans [s, e) (vectorised; Python only for unseen spans)."""
        n = e - s
        short = n < SHORT
        sids = np.full(len(s), -1, dtype=np.int64)
        sids[short] = self.short[s[short], n[short]]
        miss = np.flatnonzero(sids < 0)
        if len(miss):
            keys, inv = np.unique(s[miss] * (self.length + 1) + e[miss], return_inverse=True)
            new = [self.span(*divmod(k, self.length + 1)) for k in keys.tolist()]
            sids[miss] = np.array(new, dtype=np.int64)[inv.reshape(-1)]
        return sids

    def occurrences(self, sid: int) -> np.ndarray:
        """Start positions of every occurrence of string ``sid``."""
        occ = self._occ.get(sid)
        if occ is None:
            u = self.string_of[sid]
            occ = np.flatnonzero(self.tok[: self.length - len(u) + 1] == u[0])
            for k in range(1, len(u)):
                occ = occ[self.tok[occ + k] == u[k]]
            self._occ[sid] = occ
        return occ

    def substrings(self, sid: int) -> tuple[int, ...]:
        """String ids of the proper contiguous sub-strings of string ``sid``."""
        subs = self._subs.get(sid)
        if subs is None:
            u = self.string_of[sid]
            n = len(u)
            found = {self._sid(u[i:j]) for i in range(n) for j in range(i + 1, n + 1) if j - i < n}
            subs = self._subs[sid] = tuple(sorted(found))
        return subs


# ---------------------------------------------------------------------------------------------
# Vectorised Φ^g over n candidates.
# ---------------------------------------------------------------------------------------------
def _unordered_pairs(prod: np.ndarray, totals: np.ndarray) -> np.ndarray:
    """Unordered pair counts from prod[.., c, d] = sum N_c N_d and totals[.., c] = sum N_c."""
    k = prod.shape[-1]
    diag = prod[..., np.arange(k), np.arange(k)]
    out = np.triu(prod, 1)
    out[..., np.arange(k), np.arange(k)] = (diag - totals) / 2
    return out


class _Batch:
    """All mentions of all n candidates, and the class-count vectors the kernels share.

    Mentions are arrays [M] sorted by candidate, then start: ``row``, ``s``, ``e``, class ``c``,
    ``sid`` (index of the mention's string among the S strings of this batch).  Per-string
    tables are string-major, [S, K1, n], so that gathering or summing strings moves whole
    contiguous rows; per-mention vote vectors are class-major, [K1, M], so that a reduction over
    classes is a few element-wise operations on long vectors (NumPy reduces 5-wide rows slowly).
    """

    def __init__(self, cls: np.ndarray, begin: np.ndarray, index: DocumentIndex, k1: int):
        self.n, T = n, _ = cls.shape
        self.k1, self.index, self.T = k1, index, T
        self.ent = ent = cls > 0
        start = ent.copy()
        start[:, 1:] &= begin[:, 1:] | (cls[:, 1:] != cls[:, :-1])
        boundary = start | ~ent
        boundary[:, 0] = True  # the end of the previous row
        bflat = np.append(np.flatnonzero(boundary), n * T)
        self.cls_flat = cls.reshape(-1)
        f = np.flatnonzero(start)
        self.row = f // T
        self.s = f - self.row * T
        self.e = bflat[np.searchsorted(bflat, f, side="right")] - self.row * T
        self.c = self.cls_flat[f]
        sids = index.spans(self.s, self.e)
        mask = np.zeros(len(index.string_of), dtype=bool)
        mask[sids] = True
        self.present = np.flatnonzero(mask)
        self.S = S = len(self.present)
        self.sid = (np.cumsum(mask) - 1)[sids]
        self.rc = self.row * k1 + self.c  # (candidate, class) of every mention
        self.N = np.bincount((self.sid * k1 + self.c) * n + self.row, minlength=S * k1 * n)
        self.N = self.N.reshape(S, k1 * n)
        self._gather = (self.sid * k1 + np.arange(k1)[:, None]) * n + self.row  # [K1, M]
        self._same: np.ndarray | None = None
        self._sup: np.ndarray | None = None

    def per_class(self, weights: np.ndarray | None = None) -> np.ndarray:
        """[n, K1]: the sum of ``weights`` (or 1) over the mentions of each (candidate, class)."""
        out = np.bincount(self.rc, weights=weights, minlength=self.n * self.k1)
        return out.reshape(self.n, self.k1)

    def by_class(self, votes: np.ndarray) -> np.ndarray:
        """[n, K1, K1]: out[r, c, d] = sum of votes[d, i] over the mentions i of (r, c)."""
        k1 = self.k1
        flat = self.rc * k1 + np.arange(k1)[:, None]  # [K1, M]
        out = np.bincount(flat.reshape(-1), weights=votes.reshape(-1), minlength=self.n * k1 * k1)
        return out.reshape(self.n, k1, k1)

    def at_mentions(self, table: np.ndarray) -> np.ndarray:
        """A string-major table [S, K1 * n] read at every mention: [K1, M]."""
        return table.reshape(-1)[self._gather]

    def same(self) -> np.ndarray:
        """[K1, M]: per mention, the classes of the mentions with its string (itself included)."""
        if self._same is None:
            self._same = self.at_mentions(self.N)
        return self._same

    def sup(self) -> np.ndarray:
        """[K1, M]: per mention, the classes of the mentions whose string contains its own."""
        if self._sup is None:
            local = {s: i for i, s in enumerate(self.present.tolist())}
            pairs = sorted(
                (local[a], b)
                for b, sid in enumerate(self.present.tolist())
                for a in self.index.substrings(sid)
                if a in local
            )
            full = np.zeros(self.N.shape, dtype=self.N.dtype)
            if pairs:
                arr = np.array(pairs, dtype=np.int64)
                inner, first = np.unique(arr[:, 0], return_index=True)
                full[inner] = np.add.reduceat(self.N[arr[:, 1]], first, axis=0)
            self._sup = self.at_mentions(full)
        return self._sup


def _phrase(b: _Batch) -> np.ndarray:
    out = _unordered_pairs(b.by_class(b.same()), b.per_class())
    if b.S:
        occ = [b.index.occurrences(s) for s in b.present.tolist()]
        sizes = [len(o) for o in occ]
        lens = np.array([len(b.index.string_of[s]) for s in b.present.tolist()])
        starts = np.concatenate(occ)
        cum = np.zeros((b.T + 1, b.n), dtype=np.int32)  # labeled tokens before t, [T + 1, n]
        np.cumsum(b.ent.T, axis=0, out=cum[1:])
        free = cum[starts + np.repeat(lens, sizes)] == cum[starts]  # [Q, n]: all O
        groups = np.cumsum([0, *sizes[:-1]])
        J = np.add.reduceat(free, groups, axis=0, dtype=np.int64)  # [S, n]
        out[:, :, 0] += b.per_class(J.reshape(-1)[b.sid * b.n + b.row])
    return out


def _subphrase(b: _Batch) -> np.ndarray:
    return b.by_class(b.sup())


def _count_majorities(b: _Batch, row: np.ndarray, own: np.ndarray, votes: np.ndarray):
    """[n, K1, K1]: count of (candidate, own class, majority class) over items with votes.

    ``votes`` [K1, M] are class counts per item (row 0, "O", is ignored); ties go to ``own``,
    then to the lowest class index (alphabetical).
    """
    best = np.full(len(own), 0.5)  # a class needs a vote to win
    arg = np.zeros(len(own), dtype=np.int64)
    for c in range(1, b.k1):
        score = votes[c] + 0.5 * (own == c)
        better = score > best
        best = np.where(better, score, best)
        arg[better] = c
    ok = arg > 0
    flat = (row[ok] * b.k1 + own[ok]) * b.k1 + arg[ok]
    return np.bincount(flat, minlength=b.n * b.k1 * b.k1).reshape(b.n, b.k1, b.k1)


def _tokmaj(b: _Batch) -> np.ndarray:
    f = np.flatnonzero(b.ent)
    row = f // b.T
    own = b.cls_flat[f]
    V = b.index.num_types
    key = row * V + b.index.tok[f - row * b.T]
    counts = np.bincount(own * (b.n * V) + key, minlength=b.k1 * b.n * V).reshape(b.k1, -1)
    votes = counts[:, key] - (own == np.arange(b.k1)[:, None])
    return _count_majorities(b, row, own, votes)


def _entmaj(b: _Batch) -> np.ndarray:
    votes = b.same() - (b.c == np.arange(b.k1)[:, None])
    return _count_majorities(b, b.row, b.c, votes)


def _supmaj(b: _Batch) -> np.ndarray:
    return _count_majorities(b, b.row, b.c, b.sup())


def _conj(b: _Batch) -> np.ndarray:
    idx, k1 = b.index, b.k1
    out = np.zeros((b.n, k1, k1))
    if len(b.c) < 2:
        return out
    e, s2 = b.e[:-1], b.s[1:]
    gap = s2 - e
    kind = np.where(gap == 1, idx.conn1[e], np.where(gap == 2, idx.conn2[e], 0))
    kind[(b.row[:-1] != b.row[1:]) | (idx.sentence[e - 1] != idx.sentence[s2])] = 0
    chain = np.concatenate([[0], np.cumsum(kind == 0)])  # chain id of every mention
    valid = np.bincount(chain[:-1], weights=kind == AND_OR, minlength=chain[-1] + 1) > 0
    keep = valid[chain]
    if not keep.any():
        return out
    ids, first, local = np.unique(chain[keep], return_index=True, return_inverse=True)
    C = np.bincount(local.reshape(-1) * k1 + b.c[keep], minlength=len(ids) * k1)
    C = C.reshape(len(ids), k1).astype(np.float64)
    pairs = _unordered_pairs(C[:, :, None] * C[:, None, :], C)
    np.add.at(out, b.row[keep][first], pairs)
    return out


KERNELS = {
    "phrase": _phrase,
    "subphrase": _subphrase,
    "tokmaj": _tokmaj,
    "entmaj": _entmaj,
    "supmaj": _supmaj,
    "conj": _conj,
}


def candidate_codes(
    index: DocumentIndex,
    candidates: np.ndarray,
    label_class: np.ndarray,
    label_begin: np.ndarray,
    families: Sequence[str],
    num_classes: int,
) -> np.ndarray:
    """Code counts [n, 6 * K1^2] of candidates [n, T] (label ids; a row with -1 counts 0)."""
    n, k1 = len(candidates), num_classes + 1
    out = np.zeros((n, len(FAMILIES), k1, k1))
    if n == 0 or candidates.shape[1] == 0:
        return out.astype(np.int64).reshape(n, len(FAMILIES) * k1 * k1)
    bad = (candidates < 0).any(axis=1)
    cand = np.where(bad[:, None], 0, candidates)
    cls, begin = label_class[cand], label_begin[cand]
    cls[bad] = 0
    batch = _Batch(cls, begin, index, k1)
    for name in families:
        out[:, FAMILIES.index(name)] = KERNELS[name](batch)
    return np.rint(out).astype(np.int64).reshape(n, -1)


# ---------------------------------------------------------------------------------------------
# Settings, vocabulary, CSR output, state.
# ---------------------------------------------------------------------------------------------
class NonLocalFeatures:
    """Settings and vocabulary of the non-local features; CSR Φ^g of n-best candidates.

    Args:
        families: the enabled families (a subset of ``FAMILIES``).
        casefold: compare token strings case-insensitively.
        min_count: for ``vocabulary="gold"``/``"grow"``, keep codes seen this often.
        vocabulary: ``all``, ``gold``, ``grow`` or ``hash`` (module docstring).
        num_buckets: the table size of ``vocabulary="hash"``.
        labels: the label list (id -> IOB2 tag); else taken from the documents given to ``fit``.
        max_cached_docs: documents whose ``DocumentIndex`` is kept between calls.
        max_batch: candidates computed together (larger chunks fall out of the CPU cache).
    """

    def __init__(
        self,
        families: Iterable[str] = FAMILIES,
        casefold: bool = False,
        min_count: int = 1,
        vocabulary: str = "all",
        num_buckets: int = 4096,
        labels: Sequence[str] | None = None,
        max_cached_docs: int = 4096,
        max_batch: int = 128,
    ):
        if vocabulary not in VOCABULARIES:
            raise ValueError(f"vocabulary must be one of {VOCABULARIES}, got {vocabulary!r}")
        self.families = _check_families(families)
        self.casefold = casefold
        self.min_count = min_count
        self.vocabulary = vocabulary
        self.num_buckets = num_buckets
        self.max_cached_docs = max_cached_docs
        self.max_batch = max_batch
        self.labels: list[str] = []
        self.pending: Counter = Counter()  # "grow": codes seen in candidates, not yet admitted
        self._indexes: dict[int, tuple[weakref.ref, DocumentIndex]] = {}
        if labels is not None:
            self._set_labels(labels, kept=None)

    # -- labels and the code table -----------------------------------------------------------
    def _set_labels(self, labels: Sequence[str], kept: Sequence[int] | None) -> None:
        self.labels = list(labels)
        self.classes = label_classes(self.labels)
        self.label_class = np.array(
            [0 if t == OUTSIDE else 1 + self.classes.index(split_tag(t)[1]) for t in labels],
            dtype=np.int64,
        )
        self.label_begin = np.array([t.startswith("B-") for t in labels], dtype=bool)
        self.names = code_names(self.classes)
        self.reachable = reachable_codes(self.families, len(self.classes))
        self.code_id = np.full(len(self.names), -1, dtype=np.int64)
        if self.vocabulary == "hash":
            for c in self.reachable.tolist():
                self.code_id[c] = zlib.crc32(self.names[c].encode()) % self.num_buckets
            self.codes: list[int] = []
        else:
            self.codes = list(self.reachable.tolist() if kept is None else kept)
            self.code_id[self.codes] = np.arange(len(self.codes))

    def fit(self, docs: Iterable[Document], labels: Sequence[str] | None = None):
        """Fix the labels and, for ``gold``/``grow``, keep the codes of the gold labelings."""
        docs = [d for d in docs if d.tags is not None]
        if labels is None and not self.labels:
            tags = {t for d in docs for t in d.tags}
            labels = sorted(tags | {OUTSIDE}, key=lambda t: (t != OUTSIDE, t))
        self._set_labels(labels if labels is not None else self.labels, kept=None)
        if self.vocabulary in ("gold", "grow"):
            total = np.zeros(len(self.names), dtype=np.int64)
            index = {t: i for i, t in enumerate(self.labels)}
            for d in docs:
                gold = np.array([[index.get(t, 0) for t in d.tags]], dtype=np.int64)
                total += self.code_counts(d, gold)[0]
            kept = np.flatnonzero(total >= max(self.min_count, 1))
            self._set_labels(self.labels, kept=kept.tolist())
            self.pending = Counter()
        return self

    @property
    def num_features(self) -> int:
        """G, the rows of the weight table."""
        return self.num_buckets if self.vocabulary == "hash" else len(self.codes)

    def feature_names(self) -> list[str]:
        """The feature string of every id (not for ``hash``: ids are shared)."""
        if self.vocabulary == "hash":
            raise ValueError("hashed features have no id -> name map")
        return [self.names[c] for c in self.codes]

    # -- computing ---------------------------------------------------------------------------
    def index(self, doc: Document) -> DocumentIndex:
        """The cached ``DocumentIndex`` of ``doc`` (built on first use)."""
        hit = self._indexes.get(id(doc))
        if hit is not None and hit[0]() is doc:
            return hit[1]
        if len(self._indexes) >= self.max_cached_docs:
            self._indexes.pop(next(iter(self._indexes)))
        index = DocumentIndex(doc.tokens, doc.sentence_starts, self.casefold)
        self._indexes[id(doc)] = (weakref.ref(doc), index)
        return index

    def code_counts(self, doc: Document, candidates) -> np.ndarray:
        """Code counts [n, codes] of candidates [n, >= T] label ids (tensor or array)."""
        if not self.labels:
            raise RuntimeError("NonLocalFeatures has no labels: call fit() or pass labels=")
        cand = _as_array(candidates)[:, : len(doc)]
        if cand.size and cand.max() >= len(self.labels):
            raise ValueError(f"label id {cand.max()} out of range for {len(self.labels)} labels")
        index, step = self.index(doc), max(self.max_batch, 1)
        parts = [
            candidate_codes(
                index,
                cand[i : i + step],
                self.label_class,
                self.label_begin,
                self.families,
                len(self.classes),
            )
            for i in range(0, max(len(cand), 1), step)
        ]
        return parts[0] if len(parts) == 1 else np.concatenate(parts)

    def features(self, doc: Document, candidates) -> list[Counter]:
        """Φ^g of each candidate as a Counter of feature strings (all codes, no vocabulary)."""
        out = []
        for row in self.code_counts(doc, candidates):
            nz = np.flatnonzero(row)
            out.append(Counter({self.names[c]: int(row[c]) for c in nz}))
        return out

    def vectorize(self, doc: Document, candidates, admit: bool = False):
        """CSR Φ^g of candidates [n, >= T]: (ids [nnz] int64, offsets [n + 1] int64).

        ``F.embedding_bag(ids, weight [G, 1], offsets, mode="sum", include_last_offset=True)``
        gives the n scores Φ^g·α^g.  A feature that fires k times appears k times.  With
        ``admit=True`` and ``vocabulary="grow"`` the candidates' new codes are admitted first.
        """
        counts = self.code_counts(doc, candidates)
        if admit and self.vocabulary == "grow":
            self._admit(counts.sum(axis=0))
        return csr(counts, self.code_id)

    def _admit(self, seen: np.ndarray) -> int:
        new = [c for c in np.flatnonzero(seen).tolist() if self.code_id[c] < 0]
        for c in new:
            self.pending[c] += int(seen[c])
        ready = sorted(c for c in new if self.pending[c] >= max(self.min_count, 1))
        for c in ready:
            del self.pending[c]
            self.code_id[c] = len(self.codes)
            self.codes.append(c)
        return len(ready)

    # -- persistence -------------------------------------------------------------------------
    def state(self) -> tuple[dict, dict[str, torch.Tensor]]:
        """(JSON-able metadata, tensors); the vocabulary is stored as feature strings."""
        meta = {
            "kind": "nonlocal",
            "families": list(self.families),
            "casefold": self.casefold,
            "min_count": self.min_count,
            "vocabulary": self.vocabulary,
            "num_buckets": self.num_buckets,
            "labels": self.labels,
            "features": [self.names[c] for c in self.codes],
            "pending": {self.names[c]: k for c, k in sorted(self.pending.items())},
        }
        return meta, {}

    @classmethod
    def from_state(
        cls, meta: dict, tensors: dict[str, torch.Tensor] | None = None
    ) -> NonLocalFeatures:
        obj = cls(
            families=meta["families"],
            casefold=meta["casefold"],
            min_count=meta["min_count"],
            vocabulary=meta["vocabulary"],
            num_buckets=meta["num_buckets"],
        )
        if meta["labels"]:
            obj._set_labels(meta["labels"], kept=None)
            code = {name: c for c, name in enumerate(obj.names)}
            if obj.vocabulary != "hash":
                obj._set_labels(meta["labels"], kept=[code[f] for f in meta["features"]])
            obj.pending = Counter({code[f]: k for f, k in meta["pending"].items()})
        return obj


def _as_array(candidates) -> np.ndarray:
    if isinstance(candidates, torch.Tensor):
        candidates = candidates.detach().cpu().numpy()
    arr = np.asarray(candidates, dtype=np.int64)
    return arr.reshape(1, -1) if arr.ndim == 1 else arr


def csr(counts: np.ndarray, code_id: np.ndarray) -> tuple[torch.Tensor, torch.Tensor]:
    """Code counts [n, codes] -> (ids, offsets) through ``code_id`` (-1: not in the vocabulary)."""
    counts = np.where(code_id[None, :] >= 0, counts, 0)
    rows, cols = np.nonzero(counts)
    reps = counts[rows, cols]
    ids = np.repeat(code_id[cols], reps)
    offsets = np.zeros(len(counts) + 1, dtype=np.int64)
    np.cumsum(counts.sum(axis=1), out=offsets[1:])
    return torch.from_numpy(ids), torch.from_numpy(offsets)


# ---------------------------------------------------------------------------------------------
# Timing: python -m structperc.features.document TRAIN.txt [N ...]
# ---------------------------------------------------------------------------------------------
def fake_candidates(gold: np.ndarray, n: int, num_labels: int, seed: int = 0) -> np.ndarray:
    """[n, T]: the gold labeling, then n - 1 copies with 1-3 labels changed near entities."""
    rng = np.random.default_rng(seed)
    out = np.repeat(gold[None], n, axis=0)
    near = np.flatnonzero(gold > 0)
    near = near if len(near) else np.arange(len(gold))
    for r in range(1, n):
        k = int(rng.integers(1, 4))
        where = np.clip(rng.choice(near, k) + rng.integers(-2, 3, k), 0, len(gold) - 1)
        out[r, where] = rng.integers(0, num_labels, k)
    return out


def _bench(path: str, sizes: Sequence[int], length: int = 250, repeats: int = 200) -> None:
    import time

    from structperc.data.conll import read_conll

    torch.set_num_threads(1)
    docs = read_conll(path, max_docs=50)
    doc = min(docs, key=lambda d: abs(len(d) - length))
    mentions = len(spans(doc.tags))
    print(f"document {doc.source}: {len(doc)} tokens, {mentions} gold mentions")
    for n in sizes:
        nl = NonLocalFeatures().fit(docs)
        gold = np.array([nl.labels.index(t) for t in doc.tags])
        cands = torch.from_numpy(fake_candidates(gold, n, len(nl.labels)))
        weight = torch.zeros(nl.num_features, 1)
        times = []
        for _ in range(repeats + 1):
            t0 = time.perf_counter()
            ids, offsets = nl.vectorize(doc, cands)
            F.embedding_bag(ids, weight, offsets, mode="sum", include_last_offset=True)
            times.append((time.perf_counter() - t0) * 1e3)
        cold, warm = times[0], np.array(times[1:])
        print(
            f"n={n}: vectorize + embedding_bag median {np.median(warm):.2f} ms, "
            f"min {warm.min():.2f} ms; first call (new document) {cold:.2f} ms; nnz {len(ids)}"
        )


if __name__ == "__main__":
    import sys

    _bench(sys.argv[1], [int(a) for a in sys.argv[2:]] or [20, 100])
