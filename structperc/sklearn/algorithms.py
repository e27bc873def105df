"""sklearn-crfsuite's ``algorithm`` names and settings, as structperc's learners.

One table maps each name onto the learner that trains it and the learner's settings, read from
the estimator's (CRFsuite's) parameters with CRFsuite's defaults filled in (``resolved``):

    lbfgs   structperc.crf.learner.CRF, optimizer="lbfgs"; c1 > 0 adds the L1 term (OWL-QN,
            Andrew & Gao 2007), c2 the L2 term
    l2sgd   the same CRF, optimizer="sgd"
    ap      structperc.learn.perceptron.Perceptron, average=True (Collins 2002)
    pa      structperc.learn.passive_aggressive: C=c, pa_type, error_sensitive, average
            (Crammer et al. 2006)
    arow    structperc.learn.arow: variance, gamma (Mejer & Crammer 2010; not averaged, as
            CRFsuite's ``averaging`` is PA's alone)
    margin  structperc.learn.margin.MarginPerceptron: C=c (Kazama & Torisawa 2007, Alg. 3.1)
    mmvp    structperc.learn.max_margin.MaxMarginPerceptron: C=c (Shimizu & Haas 2006)

CRFsuite's L2 term is c2 ||w||^2 where structperc's CRF writes ||w||^2 / (2 sigma2), so
sigma2 = 1 / (2 c2).  Its stopping rule for the CRF (the objective's improvement over the last
``period`` iterations below ``delta``) becomes the CRF's own: the relative change below
``tol = delta`` for ``patience = period`` iterations in a row.  ``all_possible_states=False``
is CRFsuite's model, the (attribute, label) pairs seen in training (``support="observed"``,
L-BFGS); the transition matrix is always whole (``all_possible_transitions`` changes nothing).
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable
from dataclasses import dataclass

from structperc.learn.base import Learner
from structperc.native import available as numba_available

CRFSUITE_DEFAULTS = {  # what CRFsuite takes for a parameter left at None
    "min_freq": 0.0,
    "all_possible_states": False,
    "all_possible_transitions": False,
    "c1": 0.0,
    "c2": 1.0,
    "num_memories": 6,
    "epsilon": 1e-5,
    "period": 10,
    "delta": 1e-5,
    "pa_type": 1,
    "c": 1.0,
    "error_sensitive": True,
    "averaging": True,
    "variance": 1.0,
    "gamma": 1.0,
}


@dataclass(frozen=True)
class Algorithm:
    """How one ``algorithm`` name trains.

    module:         the learner's module.
    cls:            the learner's class there (None: the one ``Learner`` subclass it defines).
    settings:       the learner's keyword arguments from the resolved parameters.
    max_iterations: CRFsuite's default limit on iterations (epochs for the online learners).
    parallel:       whether it trains over several processes (``n_jobs``): not SGD, whose
                    updates are online within an epoch.
    online:         an online learner, one update per sequence (``partial_fit``: one epoch
                    a call), not the CRF's optimisation of a whole training set.
    """

    module: str
    cls: str | None
    settings: Callable[[dict], dict]
    max_iterations: int
    parallel: bool = True
    online: bool = True


def crf_settings(optimizer: str) -> Callable[[dict], dict]:
    def settings(p: dict) -> dict:
        out = {
            "optimizer": optimizer,
            "sigma2": 1.0 / (2.0 * p["c2"]) if p["c2"] > 0 else float("inf"),
            "tol": p["delta"],
            "patience": p["period"],
            "history": p["num_memories"],
            "max_iterations": p["max_iterations"],
            "scan": crf_scan(optimizer, p["device"]),
            "support": "observed"
            if optimizer == "lbfgs" and not p["all_possible_states"]
            else "all",
        }
        if optimizer == "sgd":
            # CRFsuite calibrates eta on the training objective of a sample; this pair is the
            # lowest training objective of a 4 x 3 grid after 20 epochs on the tutorial
            # pipeline's first 12,000 CoNLL-2003 training sentences (c2 = 0.1): one sentence
            # a step, as CRFsuite's SGD.  experiments/sklearn_l2sgd/ (choose_step.py, README.md)
            out.update(lr=0.2, batch_tokens=1)
        if p["c1"] > 0:
            out["c1"] = p["c1"]
        return out

    return settings


def crf_scan(optimizer: str, device: str) -> str:
    """How the CRF's DP runs: on a CPU the compiled forward-backward where numba is installed
    (``native/crf_kernels.py``); else for L-BFGS the forward algorithm over packed rows (short
    sequences: ~1.7x faster a CoNLL-2003 iteration than the tree scan of "auto")."""
    if device != "cpu":
        return "auto"
    if numba_available():
        return "compiled"
    return "sequential" if optimizer == "lbfgs" else "auto"


ALGORITHMS: dict[str, Algorithm] = {
    "lbfgs": Algorithm("structperc.crf.learner", "CRF", crf_settings("lbfgs"), 1000, online=False),
    "l2sgd": Algorithm(
        "structperc.crf.learner", "CRF", crf_settings("sgd"), 1000, parallel=False, online=False
    ),
    "ap": Algorithm("structperc.learn.perceptron", "Perceptron", lambda p: {"average": True}, 100),
    "pa": Algorithm(
        "structperc.learn.passive_aggressive",
        None,
        lambda p: {
            "C": p["c"],
            "pa_type": p["pa_type"],
            "error_sensitive": p["error_sensitive"],
            "average": p["averaging"],
        },
        100,
    ),
    "arow": Algorithm(
        "structperc.learn.arow",
        None,
        lambda p: {"variance": p["variance"], "gamma": p["gamma"]},  # not averaged (CRFsuite)
        100,
    ),
    "margin": Algorithm(
        "structperc.learn.margin",
        "MarginPerceptron",
        lambda p: {"C": p["c"], "average": p["averaging"]},
        100,
    ),
    "mmvp": Algorithm(
        "structperc.learn.max_margin",
        "MaxMarginPerceptron",
        lambda p: {"C": p["c"], "average": p["averaging"]},
        100,
    ),
}


def resolved(params: dict) -> dict:
    """The estimator's parameters with CRFsuite's defaults for those left at None, and the
    algorithm's default ``max_iterations``."""
    name = params.get("algorithm") or "lbfgs"
    if name not in ALGORITHMS:
        raise ValueError(f"algorithm must be one of {sorted(ALGORITHMS)}, got {name!r}")
    out = {k: params[k] if params.get(k) is not None else v for k, v in CRFSUITE_DEFAULTS.items()}
    out["algorithm"] = name
    out["device"] = str(params.get("device") or "cpu")
    limit = params.get("max_iterations")
    out["max_iterations"] = ALGORITHMS[name].max_iterations if limit is None else int(limit)
    if out["c1"] > 0 and name != "lbfgs":
        raise ValueError(f"c1 > 0 (L1 by OWL-QN) needs algorithm='lbfgs', got {name!r}")
    if out["c1"] < 0 or out["c2"] < 0:
        raise ValueError(f"c1 and c2 must be >= 0, got c1={out['c1']}, c2={out['c2']}")
    return out


def make_learner(params: dict) -> Learner:
    """The learner of the resolved parameters ``params`` (``resolved``)."""
    algorithm = ALGORITHMS[params["algorithm"]]
    try:
        module = importlib.import_module(algorithm.module)
    except ModuleNotFoundError as error:
        if error.name != algorithm.module:
            raise
        raise ValueError(
            f"algorithm={params['algorithm']!r} needs {algorithm.module}, which this "
            "installation of structperc does not have"
        ) from None
    cls = getattr(module, algorithm.cls) if algorithm.cls else learner_class(module)
    settings = algorithm.settings(params)
    if "c1" in settings and "c1" not in inspect.signature(cls).parameters:
        raise ValueError(
            f"c1={params['c1']} (L1 by OWL-QN) needs a CRF learner with a c1 setting, which this "
            "installation of structperc does not have; use c1=0"
        )
    return cls(**settings)


def learner_class(module) -> type[Learner]:
    """The one ``Learner`` subclass ``module`` defines."""
    found = [
        obj
        for obj in vars(module).values()
        if isinstance(obj, type)
        and issubclass(obj, Learner)
        and obj is not Learner
        and obj.__module__ == module.__name__
    ]
    if len(found) != 1:
        names = [c.__name__ for c in found]
        raise ValueError(f"{module.__name__} defines {len(found)} learners {names}, not one")
    return found[0]
