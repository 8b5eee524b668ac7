# GPU-machine calls for issue 14, item 4: warm starts (SFT on an environment's expert
# demonstrations) and GRPO runs from them, several processes side by side on the one H200.
# State lives in .scratch/dev/ (kept on a warm machine between calls; `cli train` continues a
# run from its --out), results and logs land in $OUT.
#   bash ../shared/device/pack.sh scripts/make-warm-start.ts scripts/cli.ts
#   device run: bash scripts/device/env-learning.sh SECONDS JOB...   carry: [".gpu"]
# JOB: ws:ENV:NAME[:SFT_GAMES]         a warm start into .scratch/dev/ws/NAME
#      grpo:ENV:WS_NAME:RUN[:FLAGS]    `cli train` from that warm start into .scratch/dev/RUN
#        (FLAGS: extra cli train flags, '+' for spaces, e.g. --lr+1e-4)
#      wsgrpo:ENV:NAME:SFT_GAMES:RUN[:FLAGS]   the warm start, then GRPO from it until SECONDS
set -u
budget=$1; shift
t0=$(date +%s)
el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
left() { echo $(( budget - ($(date +%s) - t0) )); }
mkdir -p .scratch/dev/ws
bash .gpu/run true # unpack node and Dawn once, before the jobs run side by side

warm_start() { # ENV NAME [SFT_GAMES]
  timeout "$(left)" bash .gpu/run node .gpu/make-warm-start.mjs --env "$1" --out .scratch/dev/ws/$2 --work .scratch/dev/ws-work-$2 ${3:+--sft-games $3} \
    > $OUT/ws-$2.json 2> $OUT/ws-$2.log; echo "rc $?" >> $OUT/ws-$2.log
  mkdir -p $OUT/ws/$2; cp .scratch/dev/ws/$2/* $OUT/ws/$2/ 2>/dev/null
}
grpo() { # ENV WS_NAME RUN [FLAGS]
  local flags=${4:-}
  timeout -s TERM "$(left)" bash .gpu/run node .gpu/cli.mjs train --env "$1" --warm-start .scratch/dev/ws/$2 \
    --out .scratch/dev/$3 --steps 300 --eval-every 10 --eval-games 200 ${flags//+/ } \
    > $OUT/$3.json 2>> .scratch/dev/$3.log; echo "rc $?" >> .scratch/dev/$3.log
  cp .scratch/dev/$3.log $OUT/; cp .scratch/dev/$3/history.jsonl $OUT/$3-history.jsonl; cp .scratch/dev/$3/run.json $OUT/$3-run.json
}
for job in "$@"; do
  IFS=: read -r kind env a b c d <<< "$job"
  case $kind in
    ws) warm_start "$env" "$a" "$b" & ;;
    grpo) grpo "$env" "$a" "$b" "$c" & ;;
    wsgrpo) ( warm_start "$env" "$a" "$b" && grpo "$env" "$a" "$c" "$d" ) & ;;
  esac
done
wait
for f in $OUT/*.log; do echo "== $f"; grep -E "eval|rc |wrote|Error|error" "$f" | tail -n 6; done
el done
