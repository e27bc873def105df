#!/usr/bin/env bash
# The runs behind experiments/train_menu/README.md: CRFsuite's training menu on CoNLL-2003 with
# the local features (+experiment=conll03_local / conll03_crf), all the training documents.
#   bash experiments/train_menu/run.sh                 # everything (about an hour on 2 cores)
#   bash experiments/train_menu/run.sh crf_l1 pa      # some of: averaged pa arow arow_avg crf crf_l1
#                                                     # crf_observed crf_l1_observed
# Online learners: all 946 training documents, 15 epochs (dev F1 is flat after ~15,
# conf/experiment/conll03_local.yaml).  The CRFs: the first 200 training documents (the full set
# takes hours on a shared 2-core machine), 100 L-BFGS / OWL-QN iterations (sklearn-crfsuite's
# tutorial's max_iterations), the experiment's sigma2 = 100 (c2 = 0.005), c1 = 0 and c1 = 0.1;
# the two CRFs may run side by side (bash run.sh crf_l1 & bash run.sh crf).  The same two on
# CRFsuite's model, learner.support=observed (only the (feature, label) pairs seen in training).
# No evaluation during training; dev and test are the full splits.
# Then: python experiments/train_menu/table.py --readme experiments/train_menu/README.md
set -euo pipefail
cd "$(dirname "$0")/../.."
R=experiments/train_menu/runs
PY="${PYTHON:-.venv/bin/python}"
S="trainer.processes=1 trainer.progress=false trainer.eval_every=0 trainer.checkpoint=false write_predictions=false save_model=false"
ONLINE="+experiment=conll03_local trainer.max_epochs=15"
CRF="+experiment=conll03_crf +data.train_docs=200 trainer.max_epochs=100"

run() {  # run NAME OVERRIDES...
  local name=$1
  shift
  local dir=$R/$name
  if [ -f "$dir/results.json" ]; then echo "done: $dir"; return; fi
  mkdir -p "$dir"
  echo "running $name"
  "$PY" -m structperc.run "$@" $S hydra.run.dir="$dir" > "$dir/stdout.log" 2>&1
  rm -rf "$dir/checkpoint" "$dir/tb" "$dir/stdout.log"
}

for name in ${@:-crf_l1 crf crf_l1_observed crf_observed averaged pa arow arow_avg}; do
  case $name in
    averaged) run averaged $ONLINE learner=averaged ;;
    pa) run pa $ONLINE learner=pa ;;
    arow) run arow $ONLINE learner=arow ;;
    arow_avg) run arow_avg $ONLINE learner=arow learner.average=true ;;
    crf) run crf $CRF learner.c1=0 ;;
    crf_l1) run crf_l1 $CRF learner.c1=0.1 ;;
    crf_observed) run crf_observed $CRF learner.c1=0 learner.support=observed ;;
    crf_l1_observed) run crf_l1_observed $CRF learner.c1=0.1 learner.support=observed ;;
    *) echo "unknown run $name" >&2; exit 2 ;;
  esac
done
