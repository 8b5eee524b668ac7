# GPU-machine calls for issue 14, item 4: the 2048 and inbox warm starts (SFT on the expert's
# demonstrations) and GRPO from each, two processes side by side on the one H200. State lives
# in .scratch/dev/ (kept on a warm machine between calls; `cli train` continues a run from its
# --out), results and logs land in $OUT.
#   bash ../shared/device/pack.sh scripts/make-warm-start.ts scripts/cli.ts
#   device run: bash scripts/device/env-learning.sh warm-start|grpo SECONDS   carry: [".gpu"]
set -u
phase=$1; budget=${2:-540}
t0=$(date +%s)
el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
mkdir -p .scratch/dev
node_run() { bash .gpu/run node "$@"; }
if [ "$phase" = warm-start ]; then
  for env in 2048 inbox; do
    ( timeout "$budget" bash .gpu/run node .gpu/make-warm-start.mjs --env $env --out .scratch/dev/ws/$env --work .scratch/dev/ws-work-$env \
        > $OUT/ws-$env.json 2> $OUT/ws-$env.log; echo "rc $?" >> $OUT/ws-$env.log ) &
  done
  wait
  for env in 2048 inbox; do mkdir -p $OUT/ws/$env; cp .scratch/dev/ws/$env/* $OUT/ws/$env/ 2>/dev/null; tail -n 4 $OUT/ws-$env.log; done
fi
if [ "$phase" = grpo ]; then
  for env in 2048 inbox; do
    ( timeout -s TERM "$budget" bash .gpu/run node .gpu/cli.mjs train --env $env --warm-start .scratch/dev/ws/$env \
        --out .scratch/dev/run-$env --steps ${STEPS:-200} --eval-every 10 --eval-games 200 \
        > $OUT/grpo-$env.json 2>> .scratch/dev/grpo-$env.log; echo "rc $?" >> .scratch/dev/grpo-$env.log ) &
  done
  wait
  for env in 2048 inbox; do cp .scratch/dev/grpo-$env.log $OUT/; cp .scratch/dev/run-$env/history.jsonl $OUT/history-$env.jsonl; cp .scratch/dev/run-$env/run.json $OUT/run-$env.json; grep -E "eval|rc" .scratch/dev/grpo-$env.log | tail -n 8; done
fi
el done
