"""A fitted sequence labeler of the scikit-learn face: its tables, labels and attribute names.

The model is CRFsuite's first-order model (``ChainWeights(edges=False)``): a state weight per
(attribute, label) and one transition matrix,

    node [A, L]   node[a, y]                   state feature (attribute a, label y)
    edge [L, L]   edge[i, j]                   transition from label i to label j

stored as safetensors bytes plus a JSON header (the labels, the attribute names or the hashing
of a hashed model, how it was trained and from what: ``info["lineage"]``): ``to_bytes`` /
``from_bytes``, no pickle, and no code but the user's plugins the header records
(``structperc.plugins``), imported before the model is rebuilt.  Pickling an estimator keeps
exactly those bytes (``estimator.CRF.__getstate__``).

A model that may be continued (``CRF(warm_start=True)``, ``partial_fit``) also keeps its
training state, in the tables' layouts (node [A, L], edge [1, L*L]), safetensors beside them:

    weights.node, weights.edge              the learner's own weights w (an averaged learner's
                                            model holds their average)
    updater.sums.node, updater.sums.edge    the lazy averaging sums u (``model/updates.py``)
    updater.seen                            instances seen (0-d)
    learner.variance.node, ...edge          AROW's per-weight variances

(``continuation.py`` reads them).  ``size`` counts the model without its training state.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import torch
from safetensors.torch import load as load_tensors
from safetensors.torch import save as save_tensors
from torch import Tensor

from structperc.model.weights import ChainWeights
from structperc.plugins import import_plugins
from structperc.sklearn.attributes import AttributeDictionary
from structperc.sklearn.hashing import HASH, HashedAttributes

FORMAT = "structperc.sklearn/2"
READS = ("structperc.sklearn/1", FORMAT)  # /1: no training state, no hashing
STATE = "state."  # the training state's prefix among the safetensors


@dataclass
class FittedModel:
    """labels [L] (classes_ order), attributes [A] (ids; a hashed model's rows), node [A, L],
    edge [L, L] on the CPU, ``info``: JSON-able facts about the training (the algorithm, its
    settings, the lineage), and ``state``: the training state (module docstring; empty: none
    kept)."""

    labels: list[str]
    attributes: AttributeDictionary | HashedAttributes
    node: Tensor
    edge: Tensor
    info: dict = field(default_factory=dict)
    state: dict[str, Tensor] = field(default_factory=dict)

    @classmethod
    def of(
        cls,
        weights: ChainWeights,
        attributes: AttributeDictionary | HashedAttributes,
        info: dict,
        state: dict[str, Tensor] | None = None,
    ) -> FittedModel:
        tables = weights.tables()
        L = weights.num_labels
        node = tables["node"].detach().to("cpu", torch.float32).contiguous()  # [A, L]
        edge = tables["edge"].detach().to("cpu", torch.float32).reshape(L, L).contiguous()
        state = {k: v.detach().to("cpu").contiguous() for k, v in (state or {}).items()}
        return cls(list(weights.labels), attributes, node, edge, info, state)

    def weights(self, device: str | torch.device = "cpu") -> ChainWeights:
        """The tables as ``ChainWeights`` (no edge features) on ``device``: the model's
        (predicting) weights."""
        weights = ChainWeights(len(self.attributes), self.labels, edges=False)
        with torch.no_grad():
            weights.node.weight.copy_(self.node)
            weights.edge.weight.copy_(self.edge.reshape(1, -1))
        return weights.to(device)

    def to_bytes(self, state: bool = True) -> tuple[bytes, str]:
        """(safetensors bytes of the tables, and of the training state unless ``state`` is
        False; the JSON header)."""
        hashed = self.attributes.hash_bits is not None
        header = {
            "format": FORMAT,
            "labels": self.labels,
            "attributes": self.attributes.names,
            "hash_bits": self.attributes.hash_bits,
            "hash": HASH if hashed else None,
            "info": self.info,
        }
        tensors = {"node": self.node, "edge": self.edge}
        if state:
            tensors.update({STATE + k: v for k, v in self.state.items()})
        return save_tensors(tensors), json.dumps(header)

    @classmethod
    def from_bytes(cls, tensors: bytes, header: str) -> FittedModel:
        """The model ``to_bytes`` wrote; ValueError naming what is wrong otherwise."""
        meta = json.loads(header)
        if not isinstance(meta, dict) or meta.get("format") not in READS:
            found = meta.get("format") if isinstance(meta, dict) else type(meta).__name__
            raise ValueError(f"model header: expected format {FORMAT!r}, got {found!r}")
        info = meta.get("info") or {}
        import_plugins(info.get("plugins"), where="model header")
        tables = load_tensors(tensors)
        labels, names = list(meta["labels"]), list(meta["attributes"])
        if meta.get("hash_bits") is not None:
            if meta.get("hash") != HASH:
                raise ValueError(f"model header: expected hash {HASH!r}, got {meta.get('hash')!r}")
            attributes = HashedAttributes(meta["hash_bits"])
        else:
            attributes = AttributeDictionary(names)
        L, A = len(labels), len(attributes)
        for name, shape in (("node", [A, L]), ("edge", [L, L])):
            if name not in tables or list(tables[name].shape) != shape:
                got = list(tables[name].shape) if name in tables else "nothing"
                raise ValueError(f"model tables: {name} should be {shape}, got {got}")
        state = {k[len(STATE) :]: v for k, v in tables.items() if k.startswith(STATE)}
        for key, t in state.items():
            shape = [] if key.endswith("seen") else [A, L] if key.endswith("node") else [1, L * L]
            if list(t.shape) != shape:
                raise ValueError(f"model state: {key} should be {shape}, got {list(t.shape)}")
        return cls(labels, attributes, tables["node"], tables["edge"], meta["info"], state)

    @property
    def size(self) -> int:
        """Bytes of the model as ``to_bytes`` writes it, without the training state."""
        tensors, header = self.to_bytes(state=False)
        return len(tensors) + len(header.encode("utf-8"))

    def state_features(self) -> dict[tuple[str, str], float]:
        """{(attribute, label): weight} of the non-zero state weights."""
        rows, cols = torch.nonzero(self.node, as_tuple=True)
        values = self.node[rows, cols].tolist()
        name_of, labels = self.attributes.name_of, self.labels
        return {
            (name_of(a), labels[y]): w
            for a, y, w in zip(rows.tolist(), cols.tolist(), values, strict=True)
        }

    def transition_features(self) -> dict[tuple[str, str], float]:
        """{(from label, to label): weight} of the non-zero transition weights."""
        rows, cols = torch.nonzero(self.edge, as_tuple=True)
        values = self.edge[rows, cols].tolist()
        return {
            (self.labels[i], self.labels[j]): w
            for i, j, w in zip(rows.tolist(), cols.tolist(), values, strict=True)
        }
