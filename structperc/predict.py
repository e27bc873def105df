"""Tag a CoNLL file with a trained model.

    python -m structperc.predict model=outputs/conll03_local/RUN input=test.txt output=out.txt

Reads the input in any supported column layout (with or without gold tags), decodes the
documents in batches, and writes every input column plus the predicted tag as the last column.
With gold tags present it also prints conlleval-style scores.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

import hydra
from omegaconf import DictConfig

from structperc.data.conll import read_conll, write_conll
from structperc.eval.chunks import evaluate
from structperc.structures.chain import ChainData
from structperc.tasks.tagging import load_tagger

log = logging.getLogger("structperc.predict")


def tag_file(
    model_dir: str | Path,
    input_path: str | Path,
    output_path: str | Path,
    *,
    layout: str = "conll2003",
    documents: str | None = None,
    batch_size: int = 16,
    device: str = "cpu",
    score: bool = True,
    n_test: int | None = None,
    constraints: str | None = None,
):
    """Tag ``input_path`` into ``output_path``; returns the chunk scores when gold tags exist.

    A model with non-local features rescores the ``n_test`` best (default: its own n');
    ``constraints`` (``none``, ``iob2``) defaults to the model's own.
    """
    structure, features = load_tagger(model_dir, n=n_test, constraints=constraints)
    structure.weights.to(device)
    docs = read_conll(input_path, layout=layout, documents=documents)
    t0 = time.perf_counter()
    data = ChainData(features.transform(docs), documents=docs)
    ids = structure.predict(data, batch_size=batch_size, device=device, progress=True)
    labels = structure.weights.labels
    pred = [[labels[i] for i in p] for p in ids]
    n_tok = sum(len(d) for d in docs)
    log.info("tagged %d documents, %d tokens in %.1fs", len(docs), n_tok, time.perf_counter() - t0)
    write_conll(output_path, docs, pred)
    if score and all(d.tags is not None for d in docs):
        return evaluate([d.tags for d in docs], pred)
    return None


@hydra.main(version_base="1.3", config_path="../conf", config_name="predict")
def main(cfg: DictConfig) -> None:
    scores = tag_file(
        cfg.model,
        cfg.input,
        cfg.output,
        layout=cfg.layout,
        documents=cfg.documents,
        batch_size=cfg.batch_size,
        device=cfg.device,
        score=cfg.evaluate,
        n_test=cfg.get("n_test"),
        constraints=cfg.get("constraints"),
    )
    log.info("wrote %s", cfg.output)
    if scores is not None:
        print(scores.format())


if __name__ == "__main__":
    main()
