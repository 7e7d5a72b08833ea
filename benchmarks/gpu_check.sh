#!/bin/bash
# The checks a lent GPU machine runs, in one call (BENCHMARKS.md, "The gnn on a GPU"); the project's own
# machine and CI have no GPU. Run from the repository root with a python that holds torch and PyG:
#   OUT=/tmp/gpu-out bash benchmarks/gpu_check.sh [BUDGET_SECONDS]
# 1. TESTS (default tests/test_gpu.py and tests/test_accel.py, the scatter fallbacks) on the GPU;
# 2. meanwhile an embedded competition is generated there (SCALE, default small: about 25 s);
# 3. then the gnn trains COLLECTION (default layout:xla:default) of it on the GPU and, side by side, on
#    one CPU core, each a fresh `solve` with the same time budget (default 120 s), and both are scored on
#    the hidden labels;
# 4. then the per-graph training step on both (bench_gnn_speed --graphs-per-step 8).
# The full scale does not fit a lent call: on a lent H100 machine (14 workers) its first graph had not
# been written after 270 s (2026-11-27), and its 1.5 GB cannot travel with the working tree (64 MiB).
# Every step has its own timeout, so what finished comes back under $OUT even when a later step did not.
set -u
OUT=${OUT:-/tmp/gpu-out}
BUDGET=${1:-120}
DATA=${DATA:-/tmp/full}
SCALE=${SCALE:-small}  # tiny: a quick try of this script itself
COLLECTION=${COLLECTION:-layout:xla:default}
TESTS=${TESTS:-tests/test_gpu.py tests/test_accel.py}
TIME=""; [ -x /usr/bin/time ] && TIME="/usr/bin/time -v"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 OMP_NUM_THREADS=1
mkdir -p "$OUT"
# the kit's command line from the checkout, runnable under timeout (a shell function is not)
TPUGRAPHS=(python3 -c "import sys; from competition.cli import main; sys.argv[0] = 'tpugraphs'; sys.exit(main())")

nvidia-smi -L
python3 -c "import torch, torch_geometric as g; print('torch', torch.__version__, 'pyg', g.__version__,
torch.cuda.get_device_name())"

workers=$(( $(nproc) > 3 ? $(nproc) - 2 : 1 ))
start=$(date +%s)
( timeout 270 $TIME "${TPUGRAPHS[@]}" synth "$DATA" --scale "$SCALE" --workers "$workers" --force >"$OUT/synth.log" 2>&1
  echo "synth exit $? after $(( $(date +%s) - start )) s" >>"$OUT/synth.log" ) &
generation=$!

timeout 240 python3 -m pytest $TESTS -p no:cacheprovider >"$OUT/pytest.log" 2>&1
echo "pytest exit $?"; tail -4 "$OUT/pytest.log"

wait $generation
tail -2 "$OUT/synth.log"
[ -f "$DATA/private/solution.csv" ] || { echo "no competition: skipping the gnn runs"; exit 0; }

run() {  # device, cpu core
    local pin=""; command -v taskset >/dev/null && pin="taskset -c $2"
    timeout $(( BUDGET + 180 )) $pin $TIME "${TPUGRAPHS[@]}" solve --data "$DATA/public" --method gnn \
        --collection "$COLLECTION" --device "$1" --time-budget "$BUDGET" --seed 0 --out "$OUT/$1.csv" \
        --json "$OUT/$1.json" --quiet >"$OUT/$1.log" 2>&1
    echo "solve on $1 exit $?" >>"$OUT/$1.log"
    "${TPUGRAPHS[@]}" score "$OUT/$1.csv" --solution "$DATA/private/solution.csv" --collection "$COLLECTION" \
        >>"$OUT/$1.log" 2>&1
}
run cuda 0 & run cpu 1 & wait
for device in cuda cpu; do
    echo "== $device"; grep -E "validation|Elapsed|Maximum resident|exit|kendall|score" "$OUT/$device.log" | tail -12
done
python3 - "$OUT" <<'PY'
import json, sys
from pathlib import Path
for device in ("cuda", "cpu"):
    path = Path(sys.argv[1], f"{device}.json")
    if not path.exists():
        print(device, "no report"); continue
    [c] = json.loads(path.read_text())["collections"]
    d = c["details"]
    print(f"{device}: valid {c['validation_score']:.4f}, fit {c['fit_seconds']:.0f} s (training {d['train_seconds']:.0f} s, "
          f"{d['steps']} steps, {d['steps'] / max(d['train_seconds'], 1e-9):.1f} steps/s), best epoch {d['best_epoch']}, "
          f"stopped by {d['stopped']}, validate {c['validate_seconds']:.0f} s, predict {c['predict_seconds']:.0f} s")
PY
# 4. the training step per graph, one graph a step against several (the variant of bench_gnn_speed), on the
#    GPU and on one CPU core of the same machine: does a step of several graphs give the GPU enough work?
for device in cuda cpu; do
    timeout 240 python3 -m benchmarks.bench_gnn_speed --data "$DATA/public" --collection layout:nlp:random \
        --device "$device" --graphs-per-step 8 --steps 40 --rounds 2 >"$OUT/gnn_speed_$device.txt" 2>&1
    echo "bench_gnn_speed on $device exit $?"; grep -A6 "per graph trained" "$OUT/gnn_speed_$device.txt"
done
