"""Load a training's kernels before forking its ranks (``sklearn/parallel.py``).

numba loads a kernel into a process on its first call (from its on-disk cache, else compiling
it), and importing numba itself takes a while: ~1 s a process on a CoNLL-2003 fit.  A process
forked afterwards inherits what its parent loaded, so ``warm_kernels`` runs every kernel that
training ``learner`` on ``weights`` will call, and the decoders, on no instances in the parent:
the ranks start with them.
"""

from __future__ import annotations

import torch

from structperc.model.updates import Updater
from structperc.model.weights import ChainWeights
from structperc.native import available as numba_available
from structperc.structures.chain import ChainData, ChainStructure


def warm_kernels(learner, weights: ChainWeights, data: ChainData, device) -> None:
    """Load the compiled kernels of this training and of decoding (nothing where there are
    none: numba missing, another device, a structure without compiled code)."""
    if not numba_available() or torch.device(device).type != "cpu":
        return
    from structperc.crf.compiled import CompiledObjective, CompiledSGD
    from structperc.native.chain_predict import compiled_chain
    from structperc.native.online import compiled_epochs

    structure = ChainStructure(weights)
    updater = Updater(weights, average=getattr(learner, "average", False))
    epoch = compiled_epochs(learner, structure, updater, data, device)
    if epoch is not None:
        epoch.warm()
    if getattr(learner, "scan", None) == "compiled" and not weights.edges:
        make = CompiledObjective if learner.optimizer == "lbfgs" else CompiledSGD
        args = (learner,) if make is CompiledSGD else ()
        make(weights, data.features, data.labels, *args).warm()
    chain = compiled_chain(structure, device)
    if chain is not None:
        chain.warm(data.features)
