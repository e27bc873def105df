#!/usr/bin/env bash
# Issue 34's first measurements, one run at a time (a run folder that has results.json is
# skipped, so the script resumes where it stopped).  From the repository root:
#   STRUCTPERC_DATA=../shared/data nice -n 10 bash experiments/wordclasses/runs.sh
#   python experiments/wordclasses/table.py --readme experiments/wordclasses/README.md
set -euo pipefail
PY=${PY:-.venv/bin/python}
R=experiments/wordclasses/runs
WC=features=kazama_wordclasses

run() {  # run NAME OVERRIDES...
  local name=$1; shift
  if [ -f "$R/$name/results.json" ]; then echo "skip $name"; return; fi
  echo "run $name: $*"
  "$PY" -m structperc.run "$@" hydra.run.dir="$R/$name" > /dev/null 2>&1 || {
    echo "failed: $name (see $R/$name/run.log)"; return 1; }
}

for seed in 0 1 2; do
  run local_seed$seed +experiment=conll03_local seed=$seed
  run local_wc_seed$seed +experiment=conll03_local $WC seed=$seed
done
run nonlocal_wc_seed0 +experiment=conll03_nonlocal $WC seed=0
# ablations on dev (seed 0): corpora, word2vec architecture, granularities
run local_wc_reuters_seed0 +experiment=conll03_local $WC 'features.word_classes.corpora=[reuters21578]' seed=0
run local_wc_cbow_seed0 +experiment=conll03_local $WC features.word_classes.architecture=cbow seed=0
run local_wc_k1000_seed0 +experiment=conll03_local $WC 'features.word_classes.kmeans=[1000]' seed=0
run local_wc_k100_seed0 +experiment=conll03_local $WC 'features.word_classes.kmeans=[100]' seed=0
# word-class bigrams too (wc[-1]|wc[0] ...), at the coarsest and the finest granularity
run local_wc_bigram100_seed0 +experiment=conll03_local $WC 'features.bigram_attributes=[wl,pos,chk,go,gp,gm,gl,wc100]' seed=0
run local_wc_bigram1000_seed0 +experiment=conll03_local $WC 'features.bigram_attributes=[wl,pos,chk,go,gp,gm,gl,wc1000]' seed=0
# CBOW (the best dev F1 of the ablations above): its seeds, Reuters alone, and the main job
for seed in 1 2; do
  run local_wc_cbow_seed$seed +experiment=conll03_local $WC features.word_classes.architecture=cbow seed=$seed
done
run local_wc_cbow_reuters_seed0 +experiment=conll03_local $WC features.word_classes.architecture=cbow 'features.word_classes.corpora=[reuters21578]' seed=0
run nonlocal_wc_cbow_seed0 +experiment=conll03_nonlocal $WC features.word_classes.architecture=cbow seed=0
# Brown clusters (pip install '.[brown]'): 100 clusters over the words seen 50 times or more
run local_bc100_seed0 +experiment=conll03_local $WC 'features.word_classes.kmeans=[]' features.word_classes.brown=100 features.word_classes.brown_min_count=50 seed=0
# the main job's setting with CBOW word classes over three seeds, and the margin perceptron
# (local features, C = 1414) with and without them
CBOW="$WC features.word_classes.architecture=cbow"
for seed in 1 2; do
  run nonlocal_wc_cbow_seed$seed +experiment=conll03_nonlocal $CBOW seed=$seed
done
for seed in 0 1 2; do
  run margin_seed$seed +experiment=conll03_local learner=margin seed=$seed
  run margin_wc_cbow_seed$seed +experiment=conll03_local learner=margin $CBOW seed=$seed
done
