# GPU-machine calls for environment learning: warm starts (SFT on an environment's expert
# demonstrations) and GRPO runs from them, several processes side by side on the one H200.
#   bash ../shared/device/pack.sh tools/make-warm-start.ts scripts/cli.ts
#   device run: bash tools/device/env-learning.sh SECONDS JOB...   carry: [".gpu"]
# JOB: ws:ENV:NAME[:FLAGS]              a warm start into .scratch/dev/ws/NAME
#      grpo:ENV:WS:RUN[:FLAGS]          `cli train` into .scratch/dev/RUN from warm start WS
#                                       (a NAME above, or `preset`: the shipped one)
#      wsgrpo:ENV:NAME:RUN[:WSFLAGS[:FLAGS]]   the warm start, then GRPO from it
#      grpoplay:ENV:WS:RUN[:FLAGS[:PLAYFLAGS]]  grpo, stopped 90 s before the call's end, then
#                                       `cli play --policy model --run` of it into RUN-play.json
#                                       (e.g. --opponent+perfect: tic-tac-toe's draw rate)
#      play:ENV:NAME[:FLAGS]            `cli play` (e.g. --policy+model+--games+200) into NAME.json
#                                       (its games too with --games-out+.scratch/dev/NAME.jsonl)
#      prof:ENV:NAME[:FLAGS]            `cli train` from the shipped warm start under node's CPU
#                                       profiler (--steps+3 ...): NAME.cpuprofile, the host's time
#      bench:NAME[:FLAGS]               tools/bench/bench-rollout.ts (e.g. --profile): the rollout's
#                                       engine time with and without the prefix store, NAME.json
#                                       (pack it too: ... tools/bench/bench-rollout.ts)
#      host:NAME[:FLAGS]                tools/bench/bench-host.ts: the host's share of a 512-game
#                                       rollout (stub engine, no GPU), sdk vs local client, NAME.json
#                                       (pack it too: ... tools/bench/bench-host.ts)
#      keep:RUN                         after every job: RUN's latest checkpoint, run.json and
#                                       history as RUN-state.tgz.00, .01, ... (15 MiB parts): to
#                                       continue it in a later session, `cat` them into tar xz -C
#                                       .scratch/dev and carry .scratch/dev/RUN
#      judge:PORT                       the rule-following RULER judge (tools/rule-judge.ts) on
#                                       127.0.0.1:PORT for the jobs after it; `@judge` in their
#                                       FLAGS is its URL (--reward+ruler+--judge-base-url+@judge+
#                                       --judge-model+rule: a job's fields cannot hold a ':')
#   bash ../shared/device/pack.sh tools/make-warm-start.ts scripts/cli.ts tools/rule-judge.ts
# FLAGS are extra flags with '+' for spaces (e.g. --explore+0.25, --eval-every+20).
# A warm start or run continues where it stopped when its folder is still there (a warm
# start's SFT resumes from its last checkpoint: make-warm-start --resume): the machine stays warm
# 30 s after a call, so a next call made at once finds .scratch/dev/ as this one left it
# (`cli train` continues a run from its --out). Each job's results (log, history, run.json,
# the warm start's files) come back as one archive in $OUT (a call returns at most 8 files).
# .gpu/run unpacks libraries (dpkg -x, ldconfig) on every call: two at once race on
# ld.so.cache, so it runs once here and the jobs start node with its environment directly.
set -u
budget=$1; shift
t0=$(date +%s)
left() { echo $(( budget - ($(date +%s) - t0) )); }
mkdir -p .scratch/dev/ws
keep=()
bash .gpu/run true
export PATH=/tmp/gpu-bin:$PATH NODE_PATH=$PWD/.gpu/node_modules
export VK_DRIVER_FILES=${VK_DRIVER_FILES:-/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json}
D=.scratch/dev # every path below is in it; node runs from the root (static/ is there)

warm_start() { # ENV NAME [FLAGS]
  [ -f $D/ws/$2/adapter_model.safetensors ] && { echo "ws $2: already made" >> $D/ws-$2.log; return 0; }
  local flags=${3:-}
  timeout "$(left)" node .gpu/make-warm-start.mjs --env "$1" --out $D/ws/$2 --work $D/ws-work-$2 --resume ${flags//+/ } \
    > $D/ws-$2.json 2>> $D/ws-$2.log
  local rc=$?; echo "rc $rc at $(( $(date +%s) - t0 )) s" >> $D/ws-$2.log; return $rc
}
grpo() { # ENV WS RUN [FLAGS [RESERVE]]   RESERVE: seconds kept for what follows it
  local flags=${4:-} ws=$2 reserve=${5:-0}
  flags=${flags//@judge/http://127.0.0.1:${judge_port:-0}/v1}
  [ "$ws" = preset ] || ws=$D/ws/$2
  # when the run began (a continued run keeps its first call's), for tools/eval-rise.ts
  [ -e $D/$3 ] || date -u +%FT%T.%3NZ > $D/$3.started
  timeout -s TERM "$(( $(left) - reserve ))" node .gpu/cli.mjs train --env "$1" --warm-start "$ws" \
    --out $D/$3 --steps 300 --eval-games 200 ${flags//+/ } > $D/$3.json 2>> $D/$3.log
  echo "rc $? at $(( $(date +%s) - t0 )) s" >> $D/$3.log
}
pack() { # NAME FILES... (those of them that exist, below $D)
  local files=(); for f in "${@:2}"; do [ -e "$D/$f" ] && files+=("$f"); done
  tar czf $OUT/$1.tgz -C $D "${files[@]}"
}
for job in "$@"; do
  IFS=: read -r kind env a b c d <<< "$job"
  case $kind in
    ws) ( warm_start "$env" "$a" "$b"; pack ws-$a ws-$a.json ws-$a.log ws/$a ) & ;;
    grpo) ( grpo "$env" "$a" "$b" "$c"; pack $b $b.json $b.log $b.started $b/history.jsonl $b/run.json ) & ;;
    play) ( timeout "$(left)" node .gpu/cli.mjs play --env "$env" ${b//+/ } > $D/$a.json 2> $D/$a.log
            pack $a $a.json $a.log $a.jsonl ) & ;;
    prof) ( timeout "$(left)" node --cpu-prof --cpu-prof-dir=$D/$a-prof .gpu/cli.mjs train --env "$env" \
              --out $D/$a --eval-every 1000 ${b//+/ } > $D/$a.json 2> $D/$a.log
            cp $D/$a-prof/*.cpuprofile $D/$a.cpuprofile; pack $a $a.json $a.log $a.cpuprofile $a/history.jsonl ) & ;;
    grpoplay) ( grpo "$env" "$a" "$b" "$c" 90
                timeout "$(left)" node .gpu/cli.mjs play --env "$env" --policy model --run $D/$b \
                  ${d//+/ } > $D/$b-play.json 2> $D/$b-play.log
                pack $b $b.json $b.log $b.started $b/history.jsonl $b/run.json $b-play.json $b-play.log ) & ;;
    bench) ( timeout "$(left)" node .gpu/bench-rollout.mjs ${a//+/ } > $D/$env.json 2> $D/$env.log
             pack $env $env.json $env.log ) & ;;
    host) ( timeout "$(left)" node .gpu/bench-host.mjs ${a//+/ } > $D/$env.json 2> $D/$env.log
            pack $env $env.json $env.log ) & ;;
    keep) keep+=("$env") ;;
    judge) node .gpu/rule-judge.mjs --port "$env" > $D/judge.log 2>&1 & judge=$! judge_port=$env; sleep 1 ;;
    wsgrpo) ( warm_start "$env" "$a" "$c" && grpo "$env" "$a" "$b" "$d"
              pack $b ws-$a.json ws-$a.log ws/$a $b.json $b.log $b.started $b/history.jsonl $b/run.json ) & ;;
  esac
  sleep 2
done
wait $(jobs -p | grep -vx "${judge:-none}")
[ -n "${judge:-}" ] && { kill "$judge"; wait "$judge"; cat $D/judge.log; }
for run in "${keep[@]}"; do # the latest checkpoint only: what `cli train` continues from
  last=$(ls $D/$run/checkpoints | sort | tail -n 1)
  tar czf - -C $D $run/run.json $run/history.jsonl $run/checkpoints/$last | split -b 15m -d - $OUT/$run-state.tgz.
done
for f in $D/*.log; do echo "== $f"; grep -E "eval|rc |wrote|Error|error" "$f" | tail -n 8; done
echo "done at $(( $(date +%s) - t0 )) s"
