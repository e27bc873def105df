#!/bin/bash
# What ran on the lent GPU machine (no package index there): from the repository root, with
# .devsite/ (hydra, omegaconf, antlr4, torch_struct, syntok copied from the venv, this script),
# .whl/ (python-crfsuite, datasets, dill, multiprocess wheels for Python 3.12) and .devdata/
# (conll2003/, conll2000/) carried beside the tree.  Outputs: device_e2e.txt, GPU.md/gpu.json;
# tests/test_gpu.py ran in a later call (device_tests.log) after the Φ^g update fix.
export PYTHONUNBUFFERED=1 STRUCTPERC_DATA=$PWD/.devdata
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=$PWD/.devsite:$PWD:/tmp/site
nvidia-smi -L
python3 -c "import torch, hydra, torch_struct, pycrfsuite; print('torch', torch.__version__, 'cuda', torch.cuda.is_available())"
python3 -c "import pyarrow, datasets; print('pyarrow', pyarrow.__version__, 'datasets', datasets.__version__)"
echo "== end to end, cpu vs cuda"
run() {  # NAME OVERRIDES...
  local name=$1; shift
  for d in cpu cuda; do
    timeout 60 python3 -m structperc.run "$@" device=$d trainer.progress=false save_model=False \
      write_predictions=False hydra.run.dir=/tmp/e2e/${name}_$d > /tmp/e2e_${name}_$d.log 2>&1 \
      || { echo "$name $d FAILED"; tail -5 /tmp/e2e_${name}_$d.log; }
  done
}
run local +experiment=conll03_local data.max_docs=80 trainer.max_epochs=3
run proposed +experiment=conll03_nonlocal 'features.gazetteers=[]' data.max_docs=60 trainer.max_epochs=2 learner.bpm_runs=2
run crf +experiment=conll03_crf data.max_docs=60 trainer.max_epochs=4
run joint +experiment=conll00_joint data.max_docs=300 trainer.max_epochs=2
python3 - <<'PY' | tee $OUT/e2e.txt
import json, glob
for f in sorted(glob.glob('/tmp/e2e/*/results.json')):
    r = json.load(open(f)); name = f.split('/')[-2]
    scores = {k: (v.get('f1') if isinstance(v, dict) else None) for k, v in r.items() if k in ('dev', 'test')}
    print(name, scores, 'epochs', r.get('epochs'), 'train_s %.1f' % r.get('train_seconds', 0))
PY
echo "== gpu bench"
cd experiments/bench && timeout 400 python3 gpu_bench.py --out $OUT/gpu 2>&1 | tail -40
