"""``CRF``: a scikit-learn estimator that takes and does what ``sklearn_crfsuite.CRF`` does.

Code written for sklearn-crfsuite runs with its import changed::

    from structperc.sklearn import CRF     # was: from sklearn_crfsuite import CRF
    crf = CRF(algorithm="lbfgs", c1=0.1, c2=0.1, max_iterations=100)
    crf.fit(X_train, y_train)              # X: sequences of python-crfsuite items, y: labels
    y_pred = crf.predict(X_test)

Each sequence of X is a list of items, one per token, in python-crfsuite's format
(``attributes.py``: a dict of str -> str / bool / number / dict / list, or a list of names);
each sequence of y the token labels (strings).  The model is CRFsuite's: a weight per
(attribute, label) and a label transition matrix (``model.py``), trained by the learner of
``algorithm`` (``algorithms.py``: lbfgs, l2sgd, ap, pa, arow as CRFsuite names them, and
structperc's margin and mmvp) through ``trainer.fit``; decoding is the chain structure's
(``structures/chain.py``: batched Viterbi, n-best, marginals), with the IOB2 constraints when
``constraints="iob2"``.

Beyond sklearn-crfsuite: ``predict_nbest`` (the n best labelings of each sequence, exact),
``n_jobs`` (training over several processes, ``parallel.py``), ``device`` (where the tables
live; "cuda" for a GPU), ``random_state`` (the seed of the online learners' orders),
``constraints``, ``warm_start`` and ``partial_fit`` (training continued from the fitted model:
new attributes and new labels grow its tables, ``continuation.py``), and ``hash_bits`` (a
model of fixed size: attributes hashed into 2^hash_bits rows, ``hashing.py``).  Parameters
left at None take CRFsuite's defaults.  A pickled estimator holds its model as safetensors
bytes and JSON (``model.py``), no torch object.

Reading the training items keeps the features' own bytes and little more (``occurrences.py``):
4 bytes an attribute occurrence, 8 a token for the offsets and 8 for the label.

Partial labels (``None``, or a set of labels, in ``y``), ``class_weight`` and
``predict(X, constraints=...)``: ``partial.py``, ``data/constraints.py``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np
import torch

try:
    from sklearn.base import BaseEstimator
except ImportError as error:  # pragma: no cover - the extra is missing
    raise ImportError(
        "structperc.sklearn needs scikit-learn: pip install 'structperc[sklearn]'"
    ) from error

from structperc.crf.edges import padded_nodes
from structperc.data.constraints import encode_constraints
from structperc.decode.marginals import node_marginals
from structperc.decode.transition_scan import shared_transition_log_partition
from structperc.explain.names import chain_namer
from structperc.explain.tokens import DocumentExplanation, explain_chain
from structperc.explain.weights import chain_weights
from structperc.learn.fitting import FitSettings
from structperc.model.batch import FeatureBatch, make_batch
from structperc.model.weights import ChainWeights
from structperc.native.chain_predict import compiled_chain
from structperc.plugins import import_plugins, recorded_plugins
from structperc.sklearn.algorithms import ALGORITHMS, make_learner, resolved
from structperc.sklearn.attributes import AttributeDictionary
from structperc.sklearn.continuation import AVERAGES, continued_start
from structperc.sklearn.eli5_support import register as register_eli5
from structperc.sklearn.hashing import HashedAttributes, check_bits
from structperc.sklearn.lineage import jsonable, lineage_entry
from structperc.sklearn.metrics import flat_accuracy_score
from structperc.sklearn.model import FittedModel
from structperc.sklearn.parallel import train_parallel, usable_jobs
from structperc.sklearn.partial import class_costs
from structperc.sklearn.sequences import LabelledSequences, blocks_of
from structperc.sklearn.training import TrainingLog, train_chain
from structperc.structures.chain import ChainData, ChainStructure, length_batches

CONSTRAINTS = ("none", "iob2")
PREDICT_BATCH = 256  # sequences scored in one lookup and decoded together
PREDICT_BLOCK = 20_000  # sequences of X read into features at a time (predict and the like)
MARGINALS_BATCH_TOKENS = 20_000  # padded tokens per forward-backward batch


class CRF(BaseEstimator):
    """A linear-chain sequence labeler with sklearn-crfsuite's interface (module docstring).

    Args (CRFsuite's, None: CRFsuite's default):
        algorithm: "lbfgs" (default), "l2sgd", "ap", "pa", "arow", "margin", "mmvp".
        min_freq: keep attributes seen more than this many times in training (0).
        all_possible_states: a weight for every (attribute, label), not only the pairs seen in
            training (False; L-BFGS).
        all_possible_transitions: accepted for compatibility: the transition matrix is whole.
        c1: L1 coefficient (0; > 0 with lbfgs: OWL-QN).  c2: L2 coefficient (1).
        max_iterations: iterations (L-BFGS) or epochs (lbfgs 1000, l2sgd 1000, others 100).
        num_memories: L-BFGS memory (6).
        epsilon: the online learners' convergence threshold on the per-token error (1e-5).
        period, delta: the CRF stops when the objective's relative change stays below ``delta``
            for ``period`` iterations in a row (10, 1e-5).
        pa_type, c, error_sensitive: passive-aggressive settings (1, 1, True); ``c`` is also
            the margin of "margin" and the step bound of "mmvp".
        averaging: predict with averaged weights (True; pa, margin, mmvp).
        variance, gamma: AROW settings (1, 1).
        verbose: progress bars while training.
    structperc's own:
        device: where the tables live and the dynamic programs run ("cpu").
        n_jobs: training processes (1; -1 every core), CPU only.
        random_state: seed of the online learners' shuffled orders (0 when None).
        constraints: "iob2" decodes only IOB2-valid labelings (labels must be IOB2 tags).
        warm_start: ``fit`` continues from the fitted model instead of starting afresh
            (scikit-learn's meaning; ``continuation.py``), and the model keeps the training
            state a later continuation needs (an averaging learner's own weights and sums,
            AROW's variances: two or three more tables beside the model's).
        warm_average: what a continued training (a warm ``fit``, ``partial_fit``) of an
            averaging learner does with the average: "continue" it over every instance of
            every training, "restart" it from the model's weights, or "auto" (restart when
            the new data brings new labels, else continue; ``continuation.py``).
        hash_bits: hash attribute names into 2^hash_bits rows (``hashing.py``): a model of
            fixed size whatever the data, without attribute names (None: a dictionary of the
            training attributes, CRFsuite's model).

        class_weight: a dict label (or chunk type) -> cost of missing it, or "balanced":
            cost-sensitive training (``partial.py``).
        plugins: modules of your own imported before training (``structperc.plugins``): the
            model records them, and unpickling it imports them again before it loads.

    ``info["lineage"]`` of ``model_`` lists the trainings the model went through (``fit``,
    ``partial_fit``, warm starts), with their data sizes, algorithms and epochs.
    """

    def __init__(
        self,
        algorithm=None,
        min_freq=None,
        all_possible_states=None,
        all_possible_transitions=None,
        c1=None,
        c2=None,
        max_iterations=None,
        num_memories=None,
        epsilon=None,
        period=None,
        delta=None,
        pa_type=None,
        c=None,
        error_sensitive=None,
        averaging=None,
        variance=None,
        gamma=None,
        verbose=False,
        device="cpu",
        n_jobs=1,
        random_state=None,
        constraints=None,
        warm_start=False,
        warm_average="auto",
        hash_bits=None,
        class_weight=None,
        plugins=None,
    ):
        self.algorithm = algorithm
        self.min_freq = min_freq
        self.all_possible_states = all_possible_states
        self.all_possible_transitions = all_possible_transitions
        self.c1 = c1
        self.c2 = c2
        self.max_iterations = max_iterations
        self.num_memories = num_memories
        self.epsilon = epsilon
        self.period = period
        self.delta = delta
        self.pa_type = pa_type
        self.c = c
        self.error_sensitive = error_sensitive
        self.averaging = averaging
        self.variance = variance
        self.gamma = gamma
        self.verbose = verbose
        self.device = device
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.constraints = constraints
        self.warm_start = warm_start
        self.warm_average = warm_average
        self.hash_bits = hash_bits
        self.class_weight = class_weight
        self.plugins = plugins

    # -- training ------------------------------------------------------------------------------
    def fit(self, X, y, X_dev=None, y_dev=None) -> CRF:
        """Train on sequences ``X`` with labels ``y`` (a label may be None, unknown, or a set of
        labels, one of them: partial labels); ``X_dev``, ``y_dev``: held-out sequences
        whose token accuracy the training log reports each epoch.  Each may be any iterable
        (a list, a generator): it is read once, into the feature matrix, and the sequences
        themselves are not kept (with ``n_jobs`` > 1 a ``X`` that is not a list is read in
        one process).  With ``warm_start`` and a fitted model, training continues from it
        (``continuation.py``): ``max_iterations`` more epochs (iterations)."""
        if (X_dev is None) != (y_dev is None):
            raise ValueError("Pass both X_dev and y_dev to use the holdout data")
        previous = getattr(self, "_model", None) if self.warm_start else None
        return self._train(X, y, X_dev, y_dev, previous, "fit")

    def partial_fit(self, X, y, classes=None) -> CRF:
        """One epoch of an online algorithm (ap, pa, arow, margin, mmvp) over the sequences
        ``X`` with labels ``y`` (any iterables), continuing from the fitted model if there is
        one (``continuation.py``: new attributes and labels grow its tables; an averaging
        learner's average goes on over every instance of every call, or restarts where new
        labels come: ``warm_average``).  ``classes``: labels to
        have in the model from now on, in this order after those it has (optional: the labels
        of ``y`` are added as they appear)."""
        if classes is not None:
            classes = list(classes)
            for label in classes:
                if not isinstance(label, str):
                    raise ValueError(f"classes: a label must be a str, got {label!r}")
        previous = getattr(self, "_model", None)
        return self._train(X, y, None, None, previous, "partial_fit", classes)

    def _train(self, X, y, X_dev, y_dev, previous, call: str, classes=None) -> CRF:
        """``fit`` / ``partial_fit`` (one epoch): train from zero, or on from ``previous``."""
        import_plugins(self.plugins)
        params = resolved(self.get_params())
        learner = make_learner(params)
        if call == "partial_fit" and not ALGORITHMS[params["algorithm"]].online:
            online = [n for n, a in ALGORITHMS.items() if a.online]
            raise ValueError(
                f"partial_fit trains the online algorithms {online}, one epoch a call; "
                f"algorithm={params['algorithm']!r} optimises a whole training set: use fit "
                "(warm_start=True starts it from the fitted model)"
            )
        self._check_constraints()
        if self.warm_average not in AVERAGES:
            raise ValueError(f"warm_average must be one of {AVERAGES}, got {self.warm_average!r}")
        bits = None if self.hash_bits is None else check_bits(self.hash_bits)
        world = usable_jobs(self.n_jobs)
        if world > 1 and not ALGORITHMS[params["algorithm"]].parallel:
            raise ValueError(
                f"algorithm={params['algorithm']!r} trains in one process (its updates are "
                f"online); use n_jobs=1, not {self.n_jobs}"
            )
        if previous is not None and previous.attributes.hash_bits != bits:
            had = previous.attributes.hash_bits
            kind = f"hashed into 2^{had} rows" if had else "a dictionary"
            raise ValueError(
                f"the fitted model's attributes are {kind} (hash_bits={had}); continuing it "
                f"needs the same hash_bits, got {self.hash_bits!r} (or warm_start=False to "
                "start afresh)"
            )
        known = list(previous.labels) if previous is not None else []
        known += [c for c in dict.fromkeys(classes or []) if c not in known]
        train = LabelledSequences(X, y, "X", "y", known)
        if previous is not None:
            attributes = previous.attributes
        else:
            attributes = AttributeDictionary() if bits is None else HashedAttributes(bits)
        attributes, features, values = attributes.grown(
            train.sequences(world > 1 and isinstance(X, Sequence)),
            params["min_freq"],
            jobs=world,  # n_jobs processes read the items too
            numbers=train.numbers,
        )
        if not train.num_tokens:
            raise ValueError("X has no sequence with tokens: nothing to train on")
        labels = train.labels
        learner.label_costs = class_costs(self.class_weight, labels, train.label_counts())
        data = chain_data(features, values, train.gold_tensor(), train.allowed_tensor())
        dev = None
        if X_dev is not None:
            held = LabelledSequences(X_dev, y_dev, "X_dev", "y_dev", labels, grow=False)
            found = attributes.transform(held.sequences(), "X_dev", held.numbers)
            dev = chain_data(*found, held.gold_tensor())
        start = None
        if previous is not None:
            start = continued_start(previous, len(attributes), labels, learner, self.warm_average)
        before = start.epoch if start is not None else 0
        epochs = 1 if call == "partial_fit" else params["max_iterations"]
        settings = FitSettings(
            max_epochs=before + epochs,
            tol=params["epsilon"],
            patience=3,
            shuffle=True,
            seed=0 if self.random_state is None else int(self.random_state),
            device=self.device,
            progress=bool(self.verbose),
        )
        keep = bool(self.warm_start) or call == "partial_fit"
        weights = ChainWeights(len(attributes), labels, edges=False)
        if world > 1:
            log, state = train_parallel(world, learner, weights, data, settings, dev, start, keep)
        else:
            weights = weights.to(self.device)
            log, state = train_chain(
                learner, weights, data, settings, dev, start=start, keep_state=keep
            )
        entry = lineage_entry(call, params, train, log, previous, attributes, labels, start)
        epoch = int(previous.info.get("epoch", 0)) if previous is not None else 0
        if learner.online and log.iterations:
            epoch = log.iterations[-1]["num"]  # the online epochs' count goes on (their orders)
        info = {
            "algorithm": params["algorithm"],
            "settings": jsonable(params),
            "n_jobs": world,
            "epoch": epoch,
            "lineage": [*(previous.info.get("lineage", []) if previous else []), entry],
            "plugins": recorded_plugins(),
        }
        self._model = FittedModel.of(weights, attributes, info, state)
        self._structure, self._structure_key = None, None
        self.training_log_: TrainingLog = log
        register_eli5(CRF)  # eli5.explain_weights(crf), where eli5 is installed
        return self

    def _check_constraints(self) -> None:
        if (self.constraints or "none") not in CONSTRAINTS:
            raise ValueError(f"constraints must be one of {CONSTRAINTS}, got {self.constraints!r}")

    # -- the fitted model ----------------------------------------------------------------------
    @property
    def model_(self) -> FittedModel:
        model = getattr(self, "_model", None)
        if model is None:
            raise AttributeError("this CRF is not fitted yet: call fit(X, y) first")
        return model

    @property
    def classes_(self) -> list[str]:
        """The labels, in the order they first appear in the training labels."""
        return list(self.model_.labels)

    @property
    def attributes_(self) -> list[str]:
        """The attribute names of the model, ids in order; a hashed model (``hash_bits``)
        keeps no names: its rows that hold a non-zero weight, as "#<row>"."""
        model = self.model_
        if model.attributes.hash_bits is None:
            return list(model.attributes.names)
        rows = torch.nonzero(model.node.any(dim=1)).view(-1).tolist()
        return [model.attributes.name_of(r) for r in rows]

    @property
    def num_attributes_(self) -> int:
        return len(self.model_.attributes)

    @property
    def state_features_(self) -> dict[tuple[str, str], float]:
        """{(attribute, label): weight}, the non-zero state weights (a hashed model's
        attributes are its rows, "#<row>": ``hashing.row_of`` gives a name's row)."""
        return self.model_.state_features()

    @property
    def transition_features_(self) -> dict[tuple[str, str], float]:
        """{(from label, to label): weight}, the non-zero transition weights."""
        return self.model_.transition_features()

    @property
    def size_(self) -> int:
        """Bytes of the model (safetensors tables and JSON header), without the training state
        a ``warm_start`` model keeps."""
        return self.model_.size

    def __sklearn_is_fitted__(self) -> bool:
        return getattr(self, "_model", None) is not None

    def structure_(self) -> ChainStructure:
        """The chain over the fitted tables on ``device``, with the ``constraints`` (built
        again when either changes)."""
        key = (str(self.device), self.constraints or "none")
        if getattr(self, "_structure", None) is None or self._structure_key != key:
            self._check_constraints()
            weights = self.model_.weights(self.device)
            self._structure = ChainStructure(weights, key[1])
            self._structure_key = key
        return self._structure

    def _decoded(self, X, decode) -> list:
        """``decode(ChainData)`` of the non-empty sequences of ``X`` (any iterable, read in
        blocks of ``PREDICT_BLOCK`` sequences: the features of one block at a time), the
        empty ones given [] (nothing to label); a list, one entry per sequence."""
        out: list = []
        for block in blocks_of(X, PREDICT_BLOCK):
            start = len(out)
            out.extend([] for _ in block)
            kept = [s for s, xseq in enumerate(block) if len(xseq)]
            if not kept:
                continue
            found = self.model_.attributes.transform(
                (block[s] for s in kept), "X", [start + s for s in kept]
            )
            for s, result in zip(kept, decode(chain_data(*found)), strict=True):
                out[start + s] = result
        return out

    # -- prediction ----------------------------------------------------------------------------
    def predict(self, X, constraints=None) -> np.ndarray:
        """The best labeling of each sequence: an object array of label lists.  ``constraints``:
        one entry per sequence (None, a ``data.constraints.Constraints``, its fields as a dict,
        or one entry per token: None free, a label fixed, a set of labels allowed): the best
        labeling that keeps them, exactly."""
        if constraints is not None:
            return self._predict_constrained(list(X), list(constraints))
        structure, labels = self.structure_(), self.model_.labels

        compiled = compiled_chain(structure, self.device)

        def decode(data: ChainData) -> list:
            if compiled is not None:  # numba: one pass, no padding (native/chain_predict.py)
                return [
                    [labels[j] for j in path.tolist()] for path in compiled.labels(data.features)
                ]
            paths = structure.predict(data, batch_size=PREDICT_BATCH, device=self.device)
            return [[labels[j] for j in path] for path in paths]

        return object_array(self._decoded(X, decode))

    def _predict_constrained(self, X: list, constraints: list) -> np.ndarray:
        if len(X) != len(constraints):
            raise ValueError(f"{len(constraints)} constraints for {len(X)} sequences of X")
        structure, labels = self.structure_(), self.model_.labels
        out: list = [[] for _ in X]
        kept = [s for s, xseq in enumerate(X) if len(xseq)]
        if kept:
            data = chain_data(*self.model_.attributes.transform((X[s] for s in kept), "X", kept))
            lengths = [len(X[s]) for s in kept]
            picked = [constraints[s] for s in kept]
            data.allowed, data.forbidden = encode_constraints(picked, lengths, labels)
            paths = structure.predict(data, batch_size=PREDICT_BATCH, device=self.device)
            for s, path in zip(kept, paths, strict=True):
                out[s] = [labels[j] for j in path]
        return object_array(out)

    def predict_single(self, xseq) -> list[str]:
        """The best labeling of one sequence."""
        return list(self.predict([xseq])[0])

    @torch.no_grad()
    def predict_marginals(self, X) -> np.ndarray:
        """p(y_t = label | x) of every token of every sequence: an object array of lists (one
        per sequence) of {label: probability} dicts (one per token)."""
        structure, labels = self.structure_(), self.model_.labels

        compiled = compiled_chain(structure, self.device)

        def decode(data: ChainData) -> list:
            if compiled is not None:  # numba (native/chain_predict.py)
                return [
                    [dict(zip(labels, row, strict=True)) for row in probs.tolist()]
                    for probs in compiled.marginals(data.features)
                ]
            out: list[list[dict]] = [[] for _ in range(len(data))]
            batches = length_batches(data.features, PREDICT_BATCH, self.device, False)
            for docs, batch in batches:
                probs = token_marginals(structure, batch)  # [B, T, L]
                for b, d in enumerate(docs):
                    rows = probs[b, : int(batch.lengths[b])].tolist()
                    out[d] = [dict(zip(labels, row, strict=True)) for row in rows]
            return out

        return object_array(self._decoded(X, decode))

    def predict_marginals_single(self, xseq) -> list[dict]:
        return list(self.predict_marginals([xseq])[0])

    @torch.no_grad()
    def predict_nbest(self, X, n: int) -> list[list[list[str]]]:
        """The ``n`` best labelings of each sequence, best first (fewer where a sequence has
        fewer labelings), exact (``decode/nbest.py``)."""
        if n < 1:
            raise ValueError(f"n must be >= 1, got {n}")
        structure, labels = self.structure_(), self.model_.labels

        def decode(data: ChainData) -> list:
            out = []
            for d in range(len(data)):
                batch = make_batch(data.features, [d]).to(self.device)
                paths, _ = structure.nbest(batch, n)  # [n, T]
                out.append([[labels[j] for j in p] for p in paths.tolist() if p[0] >= 0])
            return out

        return [result or [[]] for result in self._decoded(X, decode)]

    # -- explanations --------------------------------------------------------------------------
    def explain_weights(self, top: int = 20) -> dict:
        """Per label its ``top`` largest and most negative state weights (attribute names), and
        the transition matrix, L x L (from, to), as JSON (``explain/weights.py``)."""
        model = self.model_
        weights = model.weights("cpu")
        return chain_weights(
            weights, chain_namer(model.labels, model.attributes.names.__getitem__, False), top
        )

    @torch.no_grad()
    def explain_prediction(self, xseq) -> DocumentExplanation:
        """Why each item of one sequence got its label: the runner-up label (the best labeling
        with another label there), the margin and the attributes and transitions between them,
        whose contributions add up to the margin (``explain/tokens.py``)."""
        if not len(xseq):
            raise ValueError("xseq has no items to explain")
        model = self.model_
        data = chain_data(*model.attributes.transform([xseq], "xseq"))
        batch = make_batch(data.features, [0]).to(self.device)
        structure = self.structure_()
        exact = ChainStructure(model.weights(self.device).double(), structure.constraints)
        namer = chain_namer(model.labels, model.attributes.names.__getitem__, False)
        tokens = [str(t) for t in range(len(xseq))]
        pred, items = explain_chain(structure, batch, tokens, namer, scorer=exact)
        return DocumentExplanation(None, tokens, [model.labels[i] for i in pred], items)

    def score(self, X, y) -> float:
        """Token accuracy of ``predict(X)`` against ``y``."""
        return flat_accuracy_score(y, self.predict(X))

    # -- pickling ------------------------------------------------------------------------------
    def __getstate__(self) -> dict:
        skip = ("_model", "_structure", "_structure_key")
        state = {k: v for k, v in self.__dict__.items() if k not in skip}
        model = getattr(self, "_model", None)
        if model is not None:
            state["_model_bytes"] = model.to_bytes()
        return state

    def __setstate__(self, state: dict) -> None:
        state = dict(state)
        stored = state.pop("_model_bytes", None)
        self.__dict__.update(state)
        self._model = None if stored is None else FittedModel.from_bytes(*stored)
        self._structure, self._structure_key = None, None
        if self._model is not None:
            register_eli5(CRF)


def chain_data(
    features, values, gold: torch.Tensor | None = None, allowed: torch.Tensor | None = None
) -> ChainData:
    """The sequences as the chain reads them: ``features`` with their ``values`` (None: all 1)
    and the gold label ids [N] where given (-1: a label the model does not have, or a token
    left open), with the labels each token allows [N, L] (bool) where ``y`` left some open."""
    if values is not None:
        features = replace(features, values=values)
    return ChainData(features, gold, allowed=allowed)


def token_marginals(structure: ChainStructure, batch: FeatureBatch) -> torch.Tensor:
    """p(y_t = j | x) [B, T, L] of a batch of sequences (0 past each length), in float64.

    Without constraints, the forward-backward over the node scores and the one transition
    matrix (``decode/transition_scan.py``); with them, the chain's edge marginals of the
    constrained potentials (``decode/marginals.py``).
    """
    if structure.allowed is not None:
        potentials = structure.log_potentials(batch).double()  # [B, T, L, L]
        return node_marginals(potentials, batch.lengths, "scaled")
    weights = structure.weights
    L = weights.num_labels
    node, _ = weights.token_scores(batch)  # [N, L]
    padded, first = padded_nodes(node.double(), batch)  # [B, T, L], [B, T]
    transition = weights.edge.weight.view(L, L).double()
    with torch.enable_grad():
        padded.requires_grad_(True)
        log_z = shared_transition_log_partition(padded, transition, batch.lengths, first)
        (probs,) = torch.autograd.grad(log_z.sum(), padded)
    return probs


def object_array(items: list) -> np.ndarray:
    """A 1-d object array of ``items`` (lists stay lists, whatever their lengths)."""
    out = np.empty(len(items), dtype=object)
    for i, item in enumerate(items):
        out[i] = item
    return out
