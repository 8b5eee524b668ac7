# GPU-machine call: where a 512-game tic-tac-toe step's update goes. Two parts, one after
# another (timings alone on the machine):
#   1. bench-update (whole / shared / merged, 3 reps) under node's CPU profiler: the host's
#      share of the update (the .cpuprofile) beside its wall time; then one --profile rep:
#      per-kernel GPU time. -> $OUT/update.tgz
#   2. `cli train` 512-game steps (64 x 8, no evaluations, STEPS steps) recomputing the
#      activations (the default) and keeping them (--gpu-memory 70), alternating, twice each:
#      their histories' update times side by side. -> $OUT/keep.tgz
#   bash ../shared/device/pack.sh scripts/cli.ts tools/bench/bench-update.ts
#   device run: bash tools/device/update-split.sh [STEPS]   carry: [".gpu"]
set -u
steps=${1:-8}
bash .gpu/run true
export PATH=/tmp/gpu-bin:$PATH NODE_PATH=$PWD/.gpu/node_modules
export VK_DRIVER_FILES=${VK_DRIVER_FILES:-/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json}
D=.scratch/dev
mkdir -p $D/u
node --cpu-prof --cpu-prof-dir=$D/u .gpu/bench-update.mjs --reps 3 > $D/u/update.json 2> $D/u/update.log
node .gpu/bench-update.mjs --reps 1 --profile > $D/u/update-profile.json 2> $D/u/update-profile.log
tar czf $OUT/update.tgz -C $D u
runs=()
for i in 1 2; do
  for mem in none 70; do
    run=k$mem-$i; runs+=($run)
    flags=(); [ $mem = none ] || flags=(--gpu-memory $mem)
    timeout 150 node .gpu/cli.mjs train --env tictactoe --out $D/$run --groups 64 --group-size 8 \
      --steps "$steps" --eval-every 0 ${flags[@]+"${flags[@]}"} > $D/$run.json 2> $D/$run.log
    echo "$run rc $?"
  done
done
tar czf $OUT/keep.tgz -C $D $(for r in "${runs[@]}"; do echo $r.json $r.log $r/history.jsonl; done)
grep -h "update\|step_ms" $D/u/update.log | tail -n 4
