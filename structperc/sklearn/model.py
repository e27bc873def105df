"""A fitted sequence labeler of the scikit-learn face: its tables, labels and attribute names.

The model is CRFsuite's first-order model (``ChainWeights(edges=False)``): a state weight per
(attribute, label) and one transition matrix,

    node [A, L]   node[a, y]                   state feature (attribute a, label y)
    edge [L, L]   edge[i, j]                   transition from label i to label j

stored as safetensors bytes plus a JSON header (the labels, the attribute names, how it was
trained): ``to_bytes`` / ``from_bytes``, no pickle and no code in either.  Pickling an estimator
keeps exactly those bytes (``estimator.CRF.__getstate__``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import torch
from safetensors.torch import load as load_tensors
from safetensors.torch import save as save_tensors
from torch import Tensor

from structperc.model.weights import ChainWeights
from structperc.sklearn.attributes import AttributeDictionary

FORMAT = "structperc.sklearn/1"


@dataclass
class FittedModel:
    """labels [L] (classes_ order), attributes [A] (ids), node [A, L], edge [L, L] on the CPU,
    and ``info``: JSON-able facts about the training (the algorithm, its settings)."""

    labels: list[str]
    attributes: AttributeDictionary
    node: Tensor
    edge: Tensor
    info: dict = field(default_factory=dict)

    @classmethod
    def of(cls, weights: ChainWeights, attributes: AttributeDictionary, info: dict) -> FittedModel:
        tables = weights.tables()
        L = weights.num_labels
        node = tables["node"].detach().to("cpu", torch.float32).contiguous()  # [A, L]
        edge = tables["edge"].detach().to("cpu", torch.float32).reshape(L, L).contiguous()
        return cls(list(weights.labels), attributes, node, edge, info)

    def weights(self, device: str | torch.device = "cpu") -> ChainWeights:
        """The tables as ``ChainWeights`` (no edge features) on ``device``."""
        weights = ChainWeights(len(self.attributes), self.labels, edges=False)
        with torch.no_grad():
            weights.node.weight.copy_(self.node)
            weights.edge.weight.copy_(self.edge.reshape(1, -1))
        return weights.to(device)

    def to_bytes(self) -> tuple[bytes, str]:
        """(safetensors bytes of the tables, the JSON header)."""
        header = {
            "format": FORMAT,
            "labels": self.labels,
            "attributes": self.attributes.names,
            "info": self.info,
        }
        return save_tensors({"node": self.node, "edge": self.edge}), json.dumps(header)

    @classmethod
    def from_bytes(cls, tensors: bytes, header: str) -> FittedModel:
        """The model ``to_bytes`` wrote; ValueError naming what is wrong otherwise."""
        meta = json.loads(header)
        if not isinstance(meta, dict) or meta.get("format") != FORMAT:
            found = meta.get("format") if isinstance(meta, dict) else type(meta).__name__
            raise ValueError(f"model header: expected format {FORMAT!r}, got {found!r}")
        tables = load_tensors(tensors)
        labels, names = list(meta["labels"]), list(meta["attributes"])
        L, A = len(labels), len(names)
        for name, shape in (("node", [A, L]), ("edge", [L, L])):
            if name not in tables or list(tables[name].shape) != shape:
                got = list(tables[name].shape) if name in tables else "nothing"
                raise ValueError(f"model tables: {name} should be {shape}, got {got}")
        return cls(labels, AttributeDictionary(names), tables["node"], tables["edge"], meta["info"])

    @property
    def size(self) -> int:
        """Bytes of the model as ``to_bytes`` writes it."""
        tensors, header = self.to_bytes()
        return len(tensors) + len(header.encode("utf-8"))

    def state_features(self) -> dict[tuple[str, str], float]:
        """{(attribute, label): weight} of the non-zero state weights."""
        rows, cols = torch.nonzero(self.node, as_tuple=True)
        values = self.node[rows, cols].tolist()
        names, labels = self.attributes.names, self.labels
        return {
            (names[a], labels[y]): w
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
