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
    # (no averaging sums: warming writes nothing, and the kernel's types are the same)
    epoch = compiled_epochs(learner, structure, Updater(weights), data, device)
    if epoch is not None:
        epoch.warm()
    if getattr(learner, "scan", None) == "compiled":
        if learner.optimizer == "lbfgs":
            CompiledObjective(weights, data.features, data.labels).warm()
        else:
            CompiledSGD(weights, data.features, data.labels, learner).warm()
    chain = compiled_chain(structure, device)
    if chain is not None:
        chain.warm(data.features)
