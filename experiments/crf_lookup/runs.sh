#!/bin/bash
# Table 2's CRF sigma2 grid (Kazama & Torisawa 2007) again, with the factored lookup
# (structperc/crf/factored.py), by the commands of experiments/kazama2007/README.md, then the
# table (tables.py), from the checkout root:
#   STRUCTPERC_DATA=../shared/data bash experiments/crf_lookup/runs.sh          # all of them
#   STRUCTPERC_DATA=../shared/data bash experiments/crf_lookup/runs.sh 13 25    # some
set -e
PY=${PY:-.venv/bin/python}
OUT=${OUT:-/tmp/crf_lookup}
HERE=experiments/crf_lookup
for s in ${@:-13 25 50 100 200 400 800}; do
  if [ "$s" = 100 ]; then  # to convergence (CRF++'s rule), as the committed run
    more=""
  else  # 300 iterations, as the committed grid
    more="trainer.max_epochs=300 write_predictions=False save_model=False"
  fi
  $PY -m structperc.run +experiment=conll03_crf learner.sigma2=$s $more trainer.progress=false \
    hydra.run.dir="$OUT/crf_sigma2_$s"
  mkdir -p "$HERE/runs/crf_sigma2_$s"
  cp "$OUT/crf_sigma2_$s/results.json" "$OUT/crf_sigma2_$s/.hydra/overrides.yaml" \
    "$HERE/runs/crf_sigma2_$s/"
done
$PY $HERE/tables.py
