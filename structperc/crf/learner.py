"""The CRF baseline as a learner of the chain structure: L-BFGS or SGD on the likelihood.

The CRF (Lafferty et al. 2001) shares the perceptrons' model and structure
(``structures/chain.py``: node and edge ``EmbeddingBag`` tables W, token scores S = X W); it
requires the structure's "marginals" (``ChainStructure.nll``: log Z by torch-struct's scans,
``decode/marginals.py``) and trains the structure's tables.  The objective and its gradient are
in ``objective.py``; with ``optimization.py`` it is the only code of structperc that runs
autograd's backward pass.  Kazama & Torisawa's (2007) CRF baseline: Table 2, sigma^2 = 100
chosen on dev.

Two optimizers (``optimizer=``):

* ``"lbfgs"``: full-batch L-BFGS (``optimization.py``), one iteration per "epoch" — Kazama &
  Torisawa's setting (CRF++ with an L-BFGS module).
* ``"sgd"``: mini-batch SGD with sparse updates and the lazy prior (``optimization.py``).

L1 (``c1`` > 0, L-BFGS only): the objective becomes nll + ||w||^2 / (2 sigma2) + c1 ||w||_1,
minimised by OWL-QN (Andrew & Gao 2007; ``optimization.py``), CRFsuite's ``lbfgs`` with its
``c1``: weights reach exactly 0, and the run reports the non-zero ones (``summary``).

CRFsuite and sklearn-crfsuite write the L2 term as c2 ||w||^2 on the *sum* of the documents'
losses (``train_lbfgs.c``: f += c2 ||w||^2, g += 2 c2 w), as here, so

    c2 = 1 / (2 sigma2),    sigma2 = 1 / (2 c2)

(CRFsuite's default c2 = 1 is sigma2 = 0.5; Kazama & Torisawa's sigma2 = 100 is c2 = 0.005).
``c2`` may be given instead of ``sigma2``: it then sets sigma2 (c2 = 0: no L2, sigma2 = inf).

How the DP scans (``scan``) is chosen once, when ``fit`` starts (``resolved``).

On several ranks (``distributed.Group``) each rank holds a token-balanced shard of the documents;
the objective and gradient are sums over documents, so one all-reduce of the shards' sums gives
the full ones, the prior is added once, and every rank takes the identical L-BFGS step (a weight
checksum compares the ranks every few iterations).

Convergence as in CRF++ (``optimization.py``): stop when the relative change of the objective,
|f_k - f_{k-1}| / f_k, stays below ``tol`` for ``patience`` consecutive iterations (SGD: epochs,
on the objective summed during the epoch), or after ``min(max_iterations, trainer max_epochs)``.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass, replace

import torch

from structperc.crf.optimization import LBFGSTraining, SGDTraining, StopRequest
from structperc.crf.targets import LikelihoodTargets, likelihood_targets
from structperc.decode.marginals import SCANS
from structperc.distributed import SERIAL, Group
from structperc.learn.base import Learner
from structperc.learn.costs import cost_vector
from structperc.learn.fitting import FitResult, FitSettings, rank_shard
from structperc.model.updates import Updater
from structperc.native import available as numba_available

log = logging.getLogger(__name__)


@dataclass
class CRF(Learner):
    """L2-regularised linear-chain CRF trained through torch-struct (``fit``).

    Args:
        sigma2: variance of the Gaussian prior (Kazama & Torisawa tune 13 ... 800; 100 best):
            the objective's L2 term is ||w||^2 / (2 sigma2).
        c1: the L1 coefficient: + c1 ||w||_1, trained by OWL-QN (0: none; L-BFGS only).
        c2: CRFsuite's L2 coefficient (+ c2 ||w||^2); when set (not None) it replaces
            ``sigma2`` by 1 / (2 c2).
        optimizer: ``"lbfgs"`` (full batch) or ``"sgd"`` (mini-batch, sparse updates).
        max_iterations: upper bound on iterations (L-BFGS) or epochs (SGD); the trainer's
            ``max_epochs`` bounds it too (the smaller wins).
        tol, patience: stop when |f_k - f_{k-1}| / f_k < tol for ``patience`` iterations in a row.
        history: L-BFGS memory m.
        lr: SGD initial learning rate eta_0.
        batch_tokens: SGD mini-batch size in padded tokens (B * longest document).
        dp_batch_tokens: L-BFGS bucket size for the DP, in padded tokens.
        pack: L-BFGS packs documents end to end into rows of 2^k + 1 tokens (``buckets.py``:
            the same objective and gradient within rounding, without torch-struct's padding to
            powers of two); False: buckets of documents of similar length.
        support: ``"all"``: every (feature, label) weight; ``"observed"`` (L-BFGS only): the
            pairs seen in training, the others fixed at 0 (CRFsuite's model; ``sparse.py``).
        scan: how the DP computes log Z and the marginals (``decode/marginals.py``):
            ``"scaled"`` (torch-struct's binary tree with BLAS products, buckets of
            ``dp_batch_tokens``), ``"sequential"`` (the forward algorithm over one bucket of
            every row, L^2 work a position; with edge features the edges come straight from the
            token scores, ``edges.py``; with one transition matrix no edges at all,
            ``decode/transition_scan.py``), ``"log"`` (torch-struct's own), ``"compiled"``
            (one transition matrix on a CPU: the scaled forward-backward of
            ``native/crf_kernels.py``, numba, for L-BFGS and SGD), or ``"auto"``:
            sequential for L-BFGS with edge features on a CPU, scaled otherwise (``resolved``).
        dtype: floating type of the DP (``"float64"``: exact log Z over 1,000-token documents).
        label_costs: label (or chunk type) -> the cost of missing it: the softmax-margin
            likelihood, every rival labeling weighted by exp of its weighted Hamming loss
            (``learn/costs.py``); None: the plain likelihood.

    Cost of one L-BFGS iteration: ~1 evaluation = 2 lookups + 2 transposed lookups over all
    training features (O(nnz (L + L^2))), the DP O(N L^3), and O(m (F L^2)) for the update;
    memory (2 m + 4) copies of the tables.
    """

    requires = frozenset({"marginals"})  # class attributes, not fields
    online = False
    resumable = True  # trainer.fit checkpoints every iteration; a resumed run gets ``past``

    sigma2: float = 100.0
    c1: float = 0.0
    c2: float | None = None
    optimizer: str = "lbfgs"
    max_iterations: int = 1000
    tol: float = 1e-4
    patience: int = 3
    history: int = 6
    lr: float = 0.05
    batch_tokens: int = 2000
    dp_batch_tokens: int = 8000
    pack: bool = True
    support: str = "all"
    scan: str = "auto"
    dtype: str = "float64"
    label_costs: dict | None = None

    def __post_init__(self) -> None:
        if self.c2 is not None:
            if not self.c2 >= 0:
                raise ValueError(f"learner.c2 must be >= 0, got {self.c2}")
            self.sigma2 = 1.0 / (2.0 * self.c2) if self.c2 > 0 else math.inf

    def _validate(self) -> None:
        if not self.c1 >= 0:
            raise ValueError(f"learner.c1 must be >= 0, got {self.c1}")
        if self.c1 > 0 and self.optimizer != "lbfgs":
            raise ValueError("learner.c1 > 0 (L1, by OWL-QN) needs learner.optimizer=lbfgs")
        if self.optimizer not in ("lbfgs", "sgd"):
            raise ValueError(f"optimizer must be 'lbfgs' or 'sgd', got {self.optimizer!r}")
        if not self.sigma2 > 0:
            raise ValueError(f"sigma2 must be > 0, got {self.sigma2}")
        if self.support not in ("all", "observed"):
            raise ValueError(f"support must be 'all' or 'observed', got {self.support!r}")
        if self.support == "observed" and self.optimizer != "lbfgs":
            raise ValueError("learner.support=observed needs learner.optimizer=lbfgs")
        if self.dtype not in ("float32", "float64"):
            raise ValueError(f"dtype must be 'float32' or 'float64', got {self.dtype!r}")
        if self.scan not in ("auto", "compiled", *SCANS):
            choices = ["auto", "compiled", *SCANS]
            raise ValueError(f"unknown scan {self.scan!r}; choose one of {choices}")

    def resolved(
        self,
        edges: bool,
        device: str | torch.device = "cpu",
        mapped: bool = False,
        constrained: bool = False,
    ) -> CRF:
        """This learner with ``scan="auto"`` made concrete for a model with (``edges``) or
        without edge features on ``device``: ``"sequential"`` for L-BFGS with edge features on
        a CPU (one bucket of every row: its steps are the row length), else ``"scaled"``:
        buckets of ``dp_batch_tokens`` (the lower peak memory of ``features.edges=false``), and
        on an accelerator the tree scan's log-depth steps (measured on an H100,
        ``experiments/bench/gpu/``) where the sequential scan's steps are launches.  A CRF
        whose training features are ``mapped`` from disk (a corpus larger than memory,
        ``features/store.py``) takes the compiled objective on a CPU with numba
        (``native/crf_kernels.py``; with edge features, L-BFGS only,
        ``native/edge_crf_kernels.py``): it reads them document by document, where the torch
        scans hold the whole set's token scores.  Without edge features the compiled objective
        is the default in memory too: on CoNLL-2003 an L-BFGS iteration of one evaluation took
        0.6-0.8 s against 1.3-1.5 s for the scaled scan (the same objective up to rounding).
        With edge features the torch scans stay the default in memory: on CoNLL-2003 (Table 1,
        observed support) the compiled objective took 3.1 CPU s an evaluation against ~1.1 s
        for the sequential scan, whose ``embedding_bag`` adds each feature's 90 weights in
        vectorised rows.  The kernels have no transition constraints: a ``constrained``
        structure (``decoder.constraints``) takes the torch scans."""
        if self.scan != "auto":
            return self
        cpu = torch.device(device).type == "cpu"
        compiled = cpu and numba_available() and not constrained and (mapped or not edges)
        if compiled and (not edges or self.optimizer == "lbfgs"):
            return replace(self, scan="compiled")
        if mapped:
            log.warning(
                "the CRF's %s scan holds every training token's scores in memory; a training "
                "set read from disk streams through the compiled objective (a CPU with numba, "
                "L-BFGS or features.edges=false, no decoder.constraints)",
                "sequential" if edges and cpu else "scaled",
            )
        sequential = edges and self.optimizer == "lbfgs" and cpu
        return replace(self, scan="sequential" if sequential else "scaled")

    def targets(self, structure, data) -> LikelihoodTargets | None:
        """The likelihood's targets (``crf/targets.py``) when the data leave tokens open or the
        learner has label costs; None for the plain likelihood."""
        costs = cost_vector(self.label_costs, structure.weights.labels)
        allowed = getattr(data, "allowed", None)
        if costs is None and allowed is None:
            return None
        targets = likelihood_targets(data.labels, allowed, costs)
        if targets.offset is None and targets.allowed is None:
            return None
        if targets.allowed is not None:
            log.info(
                "CRF: %d of %d training tokens open: the likelihood of the compatible labelings",
                int((~targets.known).sum()),
                len(targets.gold),
            )
        return targets

    def fit(
        self,
        structure,
        updater: Updater,
        data,
        settings: FitSettings,
        on_epoch=None,
        group: Group | None = None,
        past: list | None = None,
    ) -> FitResult:
        """Train ``structure.weights`` (``updater.weights``) in place on the documents of ``data``
        (``ChainData``), through the structure's likelihood.

        Returns a ``FitResult`` whose epochs are L-BFGS iterations (or SGD epochs); each
        ``EpochLog`` carries ``extra = {"objective", "nll", ...}``.  Of ``settings`` it reads
        ``max_epochs`` (the iteration limit, with ``max_iterations``), ``seed`` (SGD's order),
        ``device`` and ``progress``; its own ``tol`` and ``patience`` apply, and training starts
        from the current weights with a fresh L-BFGS memory (with ``support=observed``, those
        outside the support zeroed, unless ``warm``: a saved model's, kept in the support).
        With a parallel ``group`` this rank trains on its shard of ``data`` (L-BFGS only).
        ``past``: the ``EpochLog`` s of the iterations a checkpoint restored (``trainer.fit``
        resumes, the weights already loaded): the run goes on from the next iteration, its
        stopping rule replayed over their objectives, with a fresh L-BFGS memory (the memory,
        2 x ``history`` full-size vectors, is not checkpointed; so the resumed run's path
        differs from an uninterrupted one's).
        """
        self._validate()
        group = group or SERIAL
        if group.parallel:
            if self.optimizer != "lbfgs":
                raise ValueError(
                    "learner.optimizer=sgd does not run distributed (its updates are online); "
                    "use learner.optimizer=lbfgs or distributed=none"
                )
            data = data.subset(rank_shard(data, group))
        limit = min(self.max_iterations, settings.max_epochs)
        optimization = LBFGSTraining if self.optimizer == "lbfgs" else SGDTraining
        constrained = getattr(structure, "allowed", None) is not None
        if constrained and self.scan == "compiled":
            raise ValueError(
                "learner.scan=compiled has no transition constraints (decoder.constraints); "
                "use learner.scan=auto, sequential or scaled"
            )
        learner = self.resolved(
            structure.weights.edges, settings.device, data.features.mapped, constrained
        )
        targets = self.targets(structure, data)
        edges = structure.weights.edges
        if (
            targets is not None
            and learner.scan == "compiled"
            and (self.optimizer == "sgd" or edges)
        ):
            # the compiled SGD epochs and the edge-feature kernel read the plain gold alone
            scan = "sequential" if edges and self.optimizer == "lbfgs" else "scaled"
            log.info(
                "the compiled %s takes no partial annotation or label costs: the CRF runs the "
                "%s scan",
                "SGD epochs" if self.optimizer == "sgd" else "edge-feature objective",
                scan,
            )
            learner = replace(learner, scan=scan)
        with StopRequest() as stop:
            run = optimization(
                learner,
                structure,
                data.features,
                data.labels,
                settings.seed,
                settings.device,
                settings.progress and group.is_main,
                group=group,
                warm=settings.warm,
                targets=targets,
            )
            return run.fit(limit, on_epoch, stop, past)
