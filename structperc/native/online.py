"""A whole online epoch in compiled code, where the learner, structure and device allow it.

``compiled_epochs`` returns a callable that ``trainer.run_epochs`` uses instead of its loop over
``learner.step``: it runs the instances of an epoch's order through
``chain_kernels.online_epoch`` (in chunks, so a progress bar moves), keeps ``Updater.seen``,
writes the touched entries into ``Updater.journal`` for parameter mixing, and returns the epoch's
``StepStats``.  It applies to

    learners    the perceptron (plain or averaged), PA / PA-I / PA-II, AROW (exactly these
                classes: a subclass may change the step)
    structure   ``ChainStructure`` over ``ChainWeights(edges=False)`` (a transition matrix:
                CRFsuite's model, the scikit-learn face's), without label constraints; over
                ``ChainWeights(edges=True)`` (Kazama & Torisawa's edge features) for the
                perceptron alone (``edge_chain_kernels.edge_perceptron_epoch``)
    data        ``ChainData`` with gold labels, on the CPU

and to nothing else (None: the Python loop).  The results are the Python loop's: the same paths
(bit for bit with a perceptron's integer weights), the same updates, sums and statistics up to
float rounding in PA's and AROW's step sizes (tests/test_native_online.py).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch

from structperc.features.read_ahead import prefetched
from structperc.features.store import SHUFFLED_RELEASE_EVERY, release_pages
from structperc.learn.arow import AROW
from structperc.learn.base import Learner, StepStats
from structperc.learn.passive_aggressive import PassiveAggressive
from structperc.learn.perceptron import Perceptron
from structperc.model.updates import Updater
from structperc.native import available as numba_available
from structperc.native.inputs import csr_arrays, table_arrays
from structperc.progress import bar
from structperc.structures.chain import ChainData, ChainStructure

CHUNK = 2048  # instances per kernel call (the progress bar's step)


def kernel_rule(learner: Learner) -> int | None:
    """The kernel's rule number for ``learner``, or None when it has none."""
    from structperc.native.chain_kernels import AROW as AROW_RULE
    from structperc.native.chain_kernels import PASSIVE_AGGRESSIVE, PERCEPTRON

    kind = type(learner)
    if kind is Perceptron and not learner.vote:
        return PERCEPTRON
    if kind is PassiveAggressive:
        return PASSIVE_AGGRESSIVE
    if kind is AROW:
        return AROW_RULE
    return None


def compiled_epochs(
    learner: Learner, structure, updater: Updater, data, device
) -> Callable[..., StepStats] | None:
    """The compiled epoch for this training, or None where it does not apply (module
    docstring) or numba is not installed."""
    if not numba_available() or torch.device(device).type != "cpu":
        return None
    if type(structure) is not ChainStructure or structure.allowed is not None:
        return None
    weights = structure.weights
    if updater.history is not None or updater.weights is not weights:
        return None
    if not isinstance(data, ChainData) or data.labels is None:
        return None
    rule = kernel_rule(learner)
    if rule is None:
        return None
    if weights.edges:  # the perceptron alone (PA's and AROW's ||d||^2 over F L^2 entries: not)
        from structperc.native.chain_kernels import PERCEPTRON

        return CompiledEdgeEpoch(structure, updater, data) if rule == PERCEPTRON else None
    return CompiledEpoch(learner, rule, structure, updater, data)


def epoch_inputs(data: ChainData, L: int, width: int, dtype) -> tuple[tuple, np.ndarray, tuple]:
    """A compiled epoch's views of ``data`` and its scratch arrays: (the CSR arrays of
    ``csr_arrays``, the gold labels [N] int64, (token scores [T, width], alpha [L], next alpha
    [L], back-pointers [T, L], path [T]) for T the longest document)."""
    csr = csr_arrays(data.features, dtype)  # doc_offsets, ids, offsets, values, weighted
    labels = np.asarray(data.labels.numpy(), dtype=np.int64)  # [N] (no copy)
    lengths = np.diff(csr[0])
    T = max(int(lengths.max()) if len(lengths) else 1, 1)
    scratch = (
        np.empty((T, width), dtype),
        np.empty(L, dtype),
        np.empty(L, dtype),
        np.empty((T, L), np.int64),
        np.empty(T, np.int64),
    )
    return csr, labels, scratch


class CompiledEpoch:
    """One learner's epochs over one data set through ``chain_kernels.online_epoch``."""

    def __init__(self, learner, rule: int, structure, updater: Updater, data: ChainData):
        from structperc.native import chain_kernels

        self.kernels = chain_kernels
        self.learner, self.rule, self.updater = learner, rule, updater
        node, _ = table_arrays(updater.weights)
        dtype = node.dtype
        L = structure.num_labels
        self.csr, self.labels, self.scratch = epoch_inputs(data, L, L, dtype)
        self.mapped = data.features.mapped
        # d's entries summed per instance: PA and AROW only (the perceptron adds d as it goes),
        # an accumulator and a mark per entry of a table, and the list of the marked ones (at
        # most two entries an occurrence of the longest instance: its gold and predicted label)
        F = node.shape[0]
        if rule == self.kernels.PERCEPTRON:
            self.acc = (np.zeros(0, np.float64), np.zeros(0, np.float64))
            self.mark = (np.zeros(0, np.uint8), np.zeros(0, np.uint8))
            self.lists = (np.empty(0, np.int64), np.empty(0, np.int64))
        else:
            ids_per_doc = np.diff(self.csr[2][self.csr[0]])  # [D] occurrences of each instance
            most = 2 * int(ids_per_doc.max()) if len(ids_per_doc) else 0
            self.acc = (np.zeros(F * L, np.float64), np.zeros(L * L, np.float64))
            self.mark = (np.zeros(F * L, np.uint8), np.zeros(L * L, np.uint8))
            self.lists = (np.empty(min(F * L, most), np.int64), np.empty(L * L, np.int64))
        self.size = (F * L, L * L)
        # the entries an epoch wrote, for parameter mixing: allocated when a journal asks
        self.touched = (np.zeros(0, np.uint8), np.zeros(0, np.uint8))

    def _kernel(self, chunk, node, edge, sums, up, pa, arow, variances, touched, stats) -> None:
        self.kernels.online_epoch(
            chunk, *self.csr, self.labels, node, edge, sums[0], sums[1], up.average, up.seen,
            self.rule,
            float(pa.C) if pa else 1.0,
            int(pa.pa_type) if pa else 0,
            bool(pa.error_sensitive) if pa else True,
            float(arow.gamma) if arow else 1.0,
            (arow.variance_rule == "crfsuite") if arow else True,
            variances[0], variances[1], touched[0], touched[1],
            *self.scratch, *self.acc, *self.mark, *self.lists, stats,
        )  # fmt: skip

    def warm(self) -> None:
        """Load the kernel in this process (numba's cache, else a compilation) by running it on
        no instances, with the argument types of an epoch; the tables are not touched."""
        node, edge = (t.reshape(-1) for t in table_arrays(self.updater.weights))
        empty = (node[:0], edge[:0])
        stats = np.zeros(5, np.float64)
        order = np.empty(0, np.int64)
        self._kernel(order, node, edge, empty, self.updater, None, None, empty, self.touched, stats)

    def __call__(self, order: list[int], progress: bool = False, desc: str = "") -> StepStats:
        """Run the instances of ``order`` (one epoch); the statistics of all of them."""
        up, learner = self.updater, self.learner
        node, edge = (t.reshape(-1) for t in table_arrays(up.weights))  # flat views
        if up.average:
            sums = tuple(up.sums[n].numpy().reshape(-1) for n in ("node", "edge"))
        else:
            sums = (node[:0], edge[:0])
        if self.rule == self.kernels.AROW:
            if learner.variances is None:
                learner.start(up)
            variances = tuple(learner.variances[n].numpy().reshape(-1) for n in ("node", "edge"))
        else:
            variances = (node[:0], edge[:0])
        journal = up.journal is not None  # parameter mixing: the entries this epoch wrote
        if journal and len(self.touched[0]) != self.size[0]:
            self.touched = tuple(np.zeros(n, np.uint8) for n in self.size)
        touched = self.touched  # (empty without a journal: the kernel then marks nothing)
        if journal:
            for mask in touched:
                mask[:] = 0
        pa = learner if self.rule == self.kernels.PASSIVE_AGGRESSIVE else None
        arow = learner if self.rule == self.kernels.AROW else None
        total = StepStats()
        loss = 0.0
        order_np = np.asarray(order, dtype=np.int64)
        stats = np.zeros(5, np.float64)
        with bar(None, total=len(order), enabled=progress, desc=desc, unit="doc") as pbar:
            step = SHUFFLED_RELEASE_EVERY if self.mapped else CHUNK  # (features/store.py)
            for lo in range(0, len(order_np), step):
                chunk = order_np[lo : lo + step]
                self._kernel(chunk, node, edge, sums, up, pa, arow, variances, touched, stats)
                total.tokens += int(stats[0])
                total.errors += int(stats[1])
                total.updates += int(stats[2])
                loss += float(stats[3])
                up.seen = int(stats[4])
                pbar.update(len(chunk))
                if self.mapped:  # (features read from disk: features/store.py)
                    release_pages()
        if self.rule != self.kernels.PERCEPTRON:
            total.extra["loss"] = loss
        if journal:
            for name, mask in zip(("node", "edge"), touched, strict=True):
                where = np.flatnonzero(mask)
                if len(where):
                    up.journal.append((name, torch.from_numpy(where)))
        return total


class CompiledEdgeEpoch:
    """The perceptron's epochs (plain or averaged) over a chain with edge features, through
    ``edge_chain_kernels.edge_perceptron_epoch``: ``CompiledEpoch``'s contract."""

    def __init__(self, structure, updater: Updater, data: ChainData):
        from structperc.native import edge_chain_kernels

        self.kernels = edge_chain_kernels
        self.updater = updater
        weights = structure.weights
        joint = weights.joint.weight.detach().numpy()  # [F, L + L*L] (a view: written in place)
        dtype = joint.dtype
        L = structure.num_labels
        self.csr, self.labels, self.scratch = epoch_inputs(data, L, joint.shape[1], dtype)
        self.mapped = data.features.mapped
        mask = weights.node_only
        self.node_only = np.zeros(0, np.uint8) if mask is None else mask.numpy().astype(np.uint8)
        # features read from disk: each chunk's documents copied by pread (features/store.py), the
        # next ones while the kernel runs this one (features/read_ahead.py), the document bounds
        # in memory
        self.files = data.features.files if self.mapped else None
        self.doc_offsets = np.array(self.csr[0]) if self.files is not None else None
        self.size = (joint.shape[0] * L, joint.shape[0] * L * L)  # the node and edge entries
        self.touched = (np.zeros(0, np.uint8), np.zeros(0, np.uint8))

    def _kernel(self, chunk, joint, sums, touched, stats, read=None) -> None:
        """The kernel over the documents ``chunk``: in ``self.csr``, or, read from disk, in
        ``read`` (``_read(chunk)``'s arrays, in the chunk's order)."""
        up = self.updater
        csr, labels = self.csr, self.labels
        if self.files is not None:  # the chunk's documents, read without the maps
            csr, labels = read if read is not None else self._read(chunk)
            chunk = np.arange(len(chunk), dtype=np.int64)
        self.kernels.edge_perceptron_epoch(
            chunk, *csr, labels, joint, sums[0], sums[1], up.average, up.seen,
            touched[0], touched[1], self.node_only, *self.scratch, stats,
        )  # fmt: skip

    def _read(self, chunk: np.ndarray) -> tuple[tuple, np.ndarray]:
        """The CSR arrays (``csr_arrays``' layout) and gold labels of the documents ``chunk``, in
        its order, read by ``pread``."""
        ids, offsets, labels = [], [np.zeros(1, np.int64)], []
        lengths = np.zeros(len(chunk), np.int64)
        nnz = 0
        for k, d in enumerate(chunk.tolist()):
            first, end = int(self.doc_offsets[d]), int(self.doc_offsets[d + 1])
            doc_ids, doc_offsets = self.files.tokens(first, end)
            ids.append(doc_ids)
            offsets.append(doc_offsets[1:] + nnz)
            labels.append(self.labels[first:end])
            lengths[k] = end - first
            nnz += len(doc_ids)
        doc_offsets = np.zeros(len(chunk) + 1, np.int64)
        np.cumsum(lengths, out=doc_offsets[1:])
        values, weighted = self.csr[3], self.csr[4]  # (no values: features read from disk)
        csr = (doc_offsets, np.concatenate(ids), np.concatenate(offsets), values, weighted)
        return csr, np.concatenate(labels) if labels else self.labels[:0]

    def _tables(self) -> tuple[np.ndarray, tuple[np.ndarray, np.ndarray]]:
        up = self.updater
        joint = up.weights.joint.weight.detach().numpy()
        if up.average:
            sums = tuple(up.sums[n].numpy().reshape(-1) for n in ("node", "edge"))
        else:
            sums = (np.zeros(0, joint.dtype), np.zeros(0, joint.dtype))
        return joint, sums

    def warm(self) -> None:
        """Load the kernel in this process on no instances (``CompiledEpoch.warm``)."""
        joint, sums = self._tables()
        order = np.empty(0, np.int64)
        self._kernel(order, joint, sums, self.touched, np.zeros(5, np.float64))

    def __call__(self, order: list[int], progress: bool = False, desc: str = "") -> StepStats:
        """Run the instances of ``order`` (one epoch); the statistics of all of them."""
        up = self.updater
        joint, sums = self._tables()
        journal = up.journal is not None  # parameter mixing: the entries this epoch wrote
        if journal and len(self.touched[0]) != self.size[0]:
            self.touched = tuple(np.zeros(n, np.uint8) for n in self.size)
        if journal:
            for mask in self.touched:
                mask[:] = 0
        total = StepStats()
        order_np = np.asarray(order, dtype=np.int64)
        stats = np.zeros(5, np.float64)
        with bar(None, total=len(order), enabled=progress, desc=desc, unit="doc") as pbar:
            by_maps = self.mapped and self.files is None  # (features/store.py)
            step = SHUFFLED_RELEASE_EVERY if by_maps else CHUNK
            chunks = [order_np[lo : lo + step] for lo in range(0, len(order_np), step)]
            if self.files is not None:  # the next chunks read while the kernel runs this one
                work = prefetched(((chunk, self._read(chunk)) for chunk in chunks), depth=1)
            else:
                work = ((chunk, None) for chunk in chunks)
            for chunk, read in work:
                self._kernel(chunk, joint, sums, self.touched, stats, read)
                total.tokens += int(stats[0])
                total.errors += int(stats[1])
                total.updates += int(stats[2])
                up.seen = int(stats[4])
                pbar.update(len(chunk))
                if by_maps:
                    release_pages()
        if journal:
            for name, mask in zip(("node", "edge"), self.touched, strict=True):
                where = np.flatnonzero(mask)
                if len(where):
                    up.journal.append((name, torch.from_numpy(where)))
        return total
