#!/bin/bash
# The four runs of tables.py, one after the other, from the checkout root:
#   STRUCTPERC_DATA=../shared/data bash experiments/crf_support/runs.sh
set -e
PY=${PY:-.venv/bin/python}
OUT=${OUT:-/tmp/crf_support}
HERE=experiments/crf_support
run() {  # run NAME ARGS...: train into $OUT/NAME, keep results.json and the overrides
  local name=$1; shift
  $PY -m structperc.run +experiment=conll03_crf "$@" trainer.progress=false hydra.run.dir="$OUT/$name"
  mkdir -p "$HERE/runs/$name"
  cp "$OUT/$name/results.json" "$HERE/runs/$name/"
  cp "$OUT/$name/.hydra/overrides.yaml" "$HERE/runs/$name/"
}
run edges_all learner.support=all
run edges_observed learner.support=observed
run nodes_all learner.support=all features.edges=false
run nodes_observed learner.support=observed features.edges=false
$PY $HERE/tables.py
