# GPU-machine calls for issue 14, item 4: warm starts (SFT on an environment's expert
# demonstrations) and GRPO runs from them, several processes side by side on the one H200.
# State lives in .scratch/dev/ (kept on a warm machine between calls; `cli train` continues a
# run from its --out), results and logs land in $OUT.
#   bash ../shared/device/pack.sh scripts/make-warm-start.ts scripts/cli.ts
#   device run: bash scripts/device/env-learning.sh SECONDS JOB...   carry: [".gpu"]
# JOB: ws:ENV:NAME[:SFT_GAMES]   a warm start into .scratch/dev/ws/NAME
#      grpo:ENV:WS_NAME:RUN[:FLAGS...]   `cli train` from that warm start into .scratch/dev/RUN
#        (FLAGS: extra cli train flags, '+' for spaces, e.g. --lr+1e-4)
set -u
budget=$1; shift
t0=$(date +%s)
el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
mkdir -p .scratch/dev/ws
bash .gpu/run true # unpack node and Dawn once, before the jobs run side by side
for job in "$@"; do
  IFS=: read -r kind env name rest <<< "$job"
  if [ "$kind" = ws ]; then
    games=${rest:+--sft-games $rest}
    ( timeout "$budget" bash .gpu/run node .gpu/make-warm-start.mjs --env "$env" --out .scratch/dev/ws/$name --work .scratch/dev/ws-work-$name $games \
        > $OUT/ws-$name.json 2> $OUT/ws-$name.log; echo "rc $?" >> $OUT/ws-$name.log
      mkdir -p $OUT/ws/$name; cp .scratch/dev/ws/$name/* $OUT/ws/$name/ 2>/dev/null ) &
  else
    IFS=: read -r wsname run flags <<< "$rest"
    ( timeout -s TERM "$budget" bash .gpu/run node .gpu/cli.mjs train --env "$env" --warm-start .scratch/dev/ws/$wsname \
        --out .scratch/dev/$run --steps 300 --eval-every 10 --eval-games 200 ${flags//+/ } \
        > $OUT/$run.json 2>> .scratch/dev/$run.log; echo "rc $?" >> .scratch/dev/$run.log
      cp .scratch/dev/$run.log $OUT/; cp .scratch/dev/$run/history.jsonl $OUT/$run-history.jsonl; cp .scratch/dev/$run/run.json $OUT/$run-run.json ) &
  fi
done
wait
for f in $OUT/*.log; do echo "== $f"; grep -E "eval|rc |wrote|Error|error" "$f" | tail -n 6; done
el done
