#!/usr/bin/env bash
# Issue 34's runs, one at a time (a run folder that has results.json is skipped, so the script
# resumes where it stopped).  From the repository root, every group or the groups named (two
# groups side by side on two cores: each run keeps to one core):
#   STRUCTPERC_DATA=../shared/data nice -n 10 bash experiments/wordclasses/runs.sh [GROUP...]
# groups: first (the first measurements), crf, kt (Kazama & Torisawa's best setting on our own
# POS and chunk columns), kt_nbest (its n' up to 6400), seeds and seeds_more (ablations over seeds
# 1-2), brown, brown_prefixes, brown_more and crf_brown (Brown clusters, m = 1000; ~48 min to
# cluster, once; kt_brown: on our columns), vectors (the vector size), timing (with and without
# classes, back to back)
#   python experiments/wordclasses/table.py --readme experiments/wordclasses/README.md
set -euo pipefail
PY=${PY:-.venv/bin/python}
R=experiments/wordclasses/runs
WC=features=kazama_wordclasses
CBOW="$WC features.word_classes.architecture=cbow"
ONE="trainer.processes=1 threads=1"   # one core a run
WANT=" ${*:-first crf kt kt_nbest seeds seeds_more brown brown_prefixes vectors brown_more crf_brown timing kt_brown} "
want() { [[ "$WANT" == *" $1 "* ]]; }

run() {  # run NAME OVERRIDES...
  local name=$1; shift
  if [ -f "$R/$name/results.json" ]; then echo "skip $name"; return; fi
  echo "run $name: $*"
  "$PY" -m structperc.run "$@" hydra.run.dir="$R/$name" > /dev/null 2>&1 || {
    echo "failed: $name (see $R/$name/run.log)"; return 1; }
}

if want first; then
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
# the main job's setting with CBOW word classes over three seeds, and the margin perceptron
# (local features, C = 1414) with and without them
for seed in 1 2; do
  run nonlocal_wc_cbow_seed$seed +experiment=conll03_nonlocal $CBOW seed=$seed
done
for seed in 0 1 2; do
  run margin_seed$seed +experiment=conll03_local learner=margin seed=$seed
  run margin_wc_cbow_seed$seed +experiment=conll03_local learner=margin $CBOW seed=$seed
done
fi
# the CRF (L-BFGS to CRF++'s rule, sigma2 = 13 as chosen on dev in ../kazama2007) with and without
# the CBOW classes (L-BFGS over the whole training set draws no random numbers: one seed)
if want crf; then
  C="+experiment=conll03_crf learner.sigma2=13 trainer.progress=false write_predictions=False save_model=False $ONE"
  run crf_seed0 $C seed=0
  run crf_wc_cbow_seed0 $C $CBOW seed=0
fi
# Kazama & Torisawa's best setting on our columns: the proposed algorithm (the main job's setting,
# n = 20 in training) on our tagger's POS and chunk columns (../tagchunk), with and without the
# CBOW classes; the models are kept for n' up to 6400 at test time (kt_nbest)
TAGGER=experiments/tagchunk/runs/conll00_tagchunk_compact_final
KT="+experiment=conll03_nonlocal features.tags=auto features.tagger=$TAGGER trainer.progress=false write_predictions=False $ONE"
if want kt; then
  for seed in 0 1 2; do
    run kt_auto_seed$seed $KT seed=$seed
    run kt_auto_wc_cbow_seed$seed $KT $CBOW seed=$seed
  done
fi
if want kt_nbest; then
  for name in kt_auto_seed0 kt_auto_wc_cbow_seed0; do
    if [ -f "$R/$name/table3.json" ]; then echo "skip $name n'"; continue; fi
    echo "n' of $name"
    "$PY" experiments/kazama2007/table3.py "$R/$name" --n 100 400 6400 > "$R/$name/table3.log" 2>&1 || {
      echo "failed: n' of $name (see $R/$name/table3.log)"; exit 1; }
  done
fi
# the seed-0 ablations of the local averaged perceptron that came close on dev, over seeds 1-2
if want seeds; then
  for seed in 1 2; do
    run local_wc_k100_seed$seed +experiment=conll03_local $WC 'features.word_classes.kmeans=[100]' seed=$seed
    run local_wc_bigram100_seed$seed +experiment=conll03_local $WC 'features.bigram_attributes=[wl,pos,chk,go,gp,gm,gl,wc100]' seed=$seed
    run local_wc_cbow_bigram100_seed$seed +experiment=conll03_local $CBOW 'features.bigram_attributes=[wl,pos,chk,go,gp,gm,gl,wc100]' seed=$seed
  done
  run local_wc_cbow_bigram100_seed0 +experiment=conll03_local $CBOW 'features.bigram_attributes=[wl,pos,chk,go,gp,gm,gl,wc100]' seed=0
fi
# the corpus ablation (Reuters alone) and the granularity k = 1000 over seeds 1-2 too
if want seeds_more; then
  for seed in 1 2; do
    run local_wc_reuters_seed$seed +experiment=conll03_local $WC 'features.word_classes.corpora=[reuters21578]' seed=$seed
    run local_wc_k1000_seed$seed +experiment=conll03_local $WC 'features.word_classes.kmeans=[1000]' seed=$seed
  done
fi
# Brown clusters (structperc/wordclasses/brown_merges.py): m = 1000 over the words seen 5 times or
# more (the vocabulary of the vectors), alone and beside the dev-chosen CBOW setting; m = 100 over
# the words seen 50 times or more (8.8k words), the small setting
BC="$WC features.word_classes.kmeans=[] features.word_classes.brown=1000"
BIGRAM100="features.bigram_attributes=[wl,pos,chk,go,gp,gm,gl,wc100]"
if want brown; then
  for seed in 0 1 2; do
    run local_bc1000_seed$seed +experiment=conll03_local $BC $ONE seed=$seed
    run local_wc_cbow_bigram100_bc1000_seed$seed +experiment=conll03_local $CBOW features.word_classes.brown=1000 "$BIGRAM100" $ONE seed=$seed
  done
  run local_bc100_seed0 +experiment=conll03_local $WC 'features.word_classes.kmeans=[]' features.word_classes.brown=100 features.word_classes.brown_min_count=50 $ONE seed=0
fi
# Brown path prefix lengths (m = 1000, three seeds): coarse only, fine only, every even length
if want brown_prefixes; then
  for seed in 0 1 2; do
    run local_bc1000_p4-6_seed$seed +experiment=conll03_local $BC 'features.word_classes.brown_prefixes=[4,6]' $ONE seed=$seed
    run local_bc1000_p10-20_seed$seed +experiment=conll03_local $BC 'features.word_classes.brown_prefixes=[10,20]' $ONE seed=$seed
    run local_bc1000_p2-20_seed$seed +experiment=conll03_local $BC 'features.word_classes.brown_prefixes=[2,4,6,8,10,12,14,16,18,20]' $ONE seed=$seed
  done
fi
# the vector size of the dev-chosen setting (CBOW, k = 100/500/1000, wc100 bigrams): 50 and 200
# dimensions against the preset's 100, three seeds
if want vectors; then
  for seed in 0 1 2; do
    for d in 50 200; do
      run local_wc_cbow_bigram100_d${d}_seed$seed +experiment=conll03_local $CBOW features.word_classes.vector_size=$d "$BIGRAM100" $ONE seed=$seed
    done
  done
fi
# Brown clusters (m = 1000) beside the CBOW classes for the other learners: the main job's setting
# (the proposed algorithm) and the margin perceptron, three seeds; the CRF, one run (deterministic)
if want brown_more; then
  for seed in 0 1 2; do
    run nonlocal_wc_cbow_bc1000_seed$seed +experiment=conll03_nonlocal $CBOW features.word_classes.brown=1000 $ONE seed=$seed
    run margin_wc_cbow_bigram100_bc1000_seed$seed +experiment=conll03_local learner=margin $CBOW features.word_classes.brown=1000 "$BIGRAM100" $ONE seed=$seed
  done
fi
if want crf_brown; then
  C="+experiment=conll03_crf learner.sigma2=13 trainer.progress=false write_predictions=False save_model=False $ONE"
  run crf_wc_cbow_bigram100_bc1000_seed0 $C $CBOW features.word_classes.brown=1000 "$BIGRAM100" seed=0
fi
# the training time with and without word classes, back to back on one core of the same machine
# (the runs above ran under changing load); the F1 must equal local_seed0's and
# local_wc_cbow_bigram100_bc1000_seed0's (the runs are deterministic)
if want timing; then
  run timing_local_seed0 +experiment=conll03_local $ONE seed=0
  run timing_local_wc_cbow_bigram100_bc1000_seed0 +experiment=conll03_local $CBOW features.word_classes.brown=1000 "$BIGRAM100" $ONE seed=0
fi
# Kazama & Torisawa's setting on our columns with the main job's classes (CBOW + Brown)
if want kt_brown; then
  for seed in 0 1 2; do
    run kt_auto_wc_cbow_bc1000_seed$seed $KT $CBOW features.word_classes.brown=1000 seed=$seed
  done
fi
