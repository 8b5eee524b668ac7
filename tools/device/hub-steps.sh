# GPU-machine call: seconds per GRPO step of each catalog model (hub-models.ts) at the page's
# auto sizes, from stand-ins (tools/make-hub-standin.ts: the real shapes, random bf16
# weights, the environment's bundled tokenizer), one run at a time so each has the GPU.
#   bash ../shared/device/pack.sh scripts/cli.ts tools/make-hub-standin.ts
#   device run: bash tools/device/hub-steps.sh SECONDS_PER_RUN [STEPS] [ENVS] [KEYS]   carry: [".gpu"]
# Replies are capped at 16 tokens (a real model's move and its end token; a random model
# never stops by itself), and an invalid reply is replaced by a random move
# (--on-invalid-reply random-move), so the games last as long as a legal player's and each
# step trains. nvidia-smi samples the GPU memory in use every 250 ms (its peak in the log,
# against the page's estimate in README.md). Each run's history, log, JSON and memory samples
# come back in $OUT/hub-steps.tgz.
set -u
per_run=$1; steps=${2:-3}; envs=${3:-"tictactoe 2048"}
keys=${4:-"smollm2-135m smollm2-360m qwen2.5-0.5b qwen3-0.6b"}
bash .gpu/run true
export PATH=/tmp/gpu-bin:$PATH NODE_PATH=$PWD/.gpu/node_modules
export VK_DRIVER_FILES=${VK_DRIVER_FILES:-/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json}
D=.scratch/dev/hub; mkdir -p $D
for key in $keys; do
  for env in $envs; do
    run=$key-$env
    node .gpu/make-hub-standin.mjs --model "$key" --env "$env" --out $D/model-$run > $D/$run.standin.json 2> $D/$run.log
    # the GPU memory in use while it runs (the whole device: nothing else runs beside it), MiB
    nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -lms 250 > $D/$run.mem 2>/dev/null &
    smi=$!
    timeout -s TERM "$per_run" node .gpu/cli.mjs train --env "$env" --model $D/model-$run --out $D/$run \
      --steps "$steps" --groups auto --max-tokens 16 --eval-every 0 \
      --on-invalid-reply random-move > $D/$run.json 2>> $D/$run.log
    rc=$?; kill $smi 2>/dev/null; wait $smi 2>/dev/null
    peak=$(sort -n $D/$run.mem 2>/dev/null | tail -n 1)
    echo "$run rc $rc: $(grep -c . $D/$run/history.jsonl 2>/dev/null) history lines, GPU memory peak ${peak:-?} MiB" | tee -a $D/$run.log
    rm -rf $D/model-$run
  done
done
(cd $D && tar czf $OUT/hub-steps.tgz *.json *.log *.mem */history.jsonl */run.json 2>/dev/null)
