# Tic-tac-toe learning runs side by side on the GPU machine (experiments/learn-tictactoe.ts), one
# process per configuration: the GPU is mostly idle under one run (small kernels; the host
# side of each step dominates), so a sweep costs little more than one run.
#   bash ../shared/device/pack.sh experiments/learn-tictactoe.ts
#   device run: [RESUME=1] CONFIGS="a:--lr 1e-4;b:--lr 2e-4" TL=530 bash experiments/tictactoe/tictactoe-sweep.sh
#               carry: [".gpu", ".ttt-state"]
# Each run resumes from .scratch/ttt-NAME (machine still warm), else from .ttt-state/NAME, else
# branches from .ttt-state/$FROM when set. $OUT gets runs.tgz (every report, log and history)
# and the resumable state of the run with the best latest greedy score (tictactoe/state.ts), as
# $OUT/state-NAME.tar.* (parts of 15 MiB: $OUT returns 8 files of 16 MiB at most). To resume:
#   rm -rf .ttt-state/NAME && mkdir -p .ttt-state/NAME && cat FILES_AT/state-NAME.tar.* | tar xf - -C .ttt-state/NAME
mkdir -p .scratch
TL=${TL:-530}
# .gpu/run unpacks the loader, node and Dawn: once, here (runs started side by side through it
# race in dpkg and ldconfig), then each run starts node with the environment it sets.
RUN=${RUN:-bash .gpu/run}
$RUN true
export PATH=/tmp/gpu-bin:$PATH NODE_PATH=$PWD/.gpu/node_modules
export VK_DRIVER_FILES=${VK_DRIVER_FILES:-/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json}
nvidia-smi --query-gpu=utilization.gpu,memory.used --format=csv,noheader -l 20 > .scratch/smi.txt 2>&1 &
smi=$!
names=(); pids=()
# RESUME=1: every run must continue a saved state (a bare machine with no carried .ttt-state
# would otherwise start it over from SFT without a word)
if [ "${RESUME:-0}" = 1 ]; then
  IFS=';' read -ra cfgs <<< "$CONFIGS"
  for cfg in "${cfgs[@]}"; do
    n=${cfg%%:*}
    [ -d .scratch/ttt-$n ] || [ -d .ttt-state/$n ] || [ -d .ttt-state/${FROM:-none} ] ||
      { echo "RESUME=1: no state for run $n (.scratch/ttt-$n, .ttt-state/$n or FROM)"; exit 2; }
  done
fi
IFS=';' read -ra cfgs <<< "$CONFIGS"
for cfg in "${cfgs[@]}"; do
  n=${cfg%%:*}; flags=${cfg#*:}; names+=("$n")
  # its own saved state, else FROM's (a run to branch from)
  src=.ttt-state/$n; [ -d "$src" ] || src=.ttt-state/${FROM:-none}
  load=(); [ -d "$src" ] && load=(--load-state "$src")
  node .gpu/learn-tictactoe.mjs --out .scratch/ttt-$n --time-limit-s $TL "${load[@]}" \
    --save-state .scratch/state-$n $flags > .scratch/$n.result.json 2> .scratch/$n.err &
  pids+=($!)
done
wait "${pids[@]}"
kill $smi 2>/dev/null
echo "gpu utilization, memory (every 20 s):"; tr '\n' ' ' < .scratch/smi.txt; echo
best=""; bestScore=-9
for n in "${names[@]}"; do
  echo "== $n: $(grep -o '"lr": [0-9.e-]*' .scratch/ttt-$n/report.json | head -1)"
  grep -E "eval (sft|grpo|final)|stuck|stopped|done|Error" .scratch/ttt-$n/log.txt | cut -c26- | tail -8
  tail -1 .scratch/$n.err
  s=$(python3 -c "import json;e=[x for x in json.load(open('.scratch/ttt-$n/report.json'))['evaluations'] if x['temperature']==0];print(e[-1]['score'])" 2>/dev/null || echo -9)
  if python3 -c "import sys;sys.exit(0 if $s > $bestScore else 1)"; then best=$n; bestScore=$s; fi
done
echo "best: $best ($bestScore)"
tar czf $OUT/runs.tgz .scratch/peft* .scratch/ttt-*/report.json .scratch/ttt-*/log.txt \
  .scratch/ttt-*/run*/history.jsonl .scratch/*.err .scratch/smi.txt 2>/dev/null
[ -n "$best" ] && tar cf - -C .scratch/state-$best . | split -b 15M - $OUT/state-$best.tar.
find $OUT -type f | head -20
