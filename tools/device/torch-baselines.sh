# GPU-machine call: TabRL beside the strongest PyTorch that runs, the same work in the same
# call (torch: eager, sdpa, and for decoding sdpa with the static cache and a compiled
# forward; fp32 with TF32 off, and bf16), median and min/max of >= 3 reps on both sides.
#   bash ../shared/device/pack.sh tools/bench/bench-grpo.ts tools/bench/bench-model.ts tools/bench/bench-generate.ts
#   device run: bash tools/device/torch-baselines.sh SECONDS PART...   carry: [".gpu"]
# PART: grpo:SHAPE      a whole GRPO step (bench-grpo.ts with shared prompts and without,
#                       then bench_grpo_torch.py --tabrl)
#       model:SHAPE     LoRA forward + backward of 8 x 512 (bench-model.ts, bench_model_torch.py)
#       generate:SHAPE  decoding at batch 1, 8, 32 (bench-generate.ts, bench_generate_torch.py)
# SHAPE: smollm2-135m or qwen2.5-0.5b. Each part's JSON and log land in $OUT; a part stops
# at the call's SECONDS (its JSON then holds what the tool printed, often nothing).
set -u
budget=$1; shift
t0=$(date +%s)
left() { echo $(( budget - ($(date +%s) - t0) )); }
el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
bash .gpu/run true
export PATH=/tmp/gpu-bin:$PATH NODE_PATH=$PWD/.gpu/node_modules
export VK_DRIVER_FILES=${VK_DRIVER_FILES:-/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json}
for part in "$@"; do
  IFS=: read -r kind shape <<< "$part"
  o=$OUT/$kind-$shape
  el "$part"
  case $kind in
    grpo)
      timeout "$(left)" node .gpu/bench-grpo.mjs --shape "$shape" --reps 3 > $o-tabrl.json 2> $o.log
      el "tabrl rc $?"
      # the same with every sequence whole (no shared prompts), as the PyTorch twin runs it
      timeout "$(left)" node .gpu/bench-grpo.mjs --shape "$shape" --reps 3 --share-prefixes no \
        > $o-tabrl-whole.json 2>> $o.log
      el "tabrl (whole sequences) rc $?"
      timeout "$(left)" python3 tools/bench/bench_grpo_torch.py --shape "$shape" --reps 3 \
        --dtypes fp32,bf16 --configs eager,sdpa,sdpa-static --tabrl $o-tabrl.json > $o.json 2>> $o.log ;;
    model)
      timeout "$(left)" node .gpu/bench-model.mjs --shape "$shape" --reps 5 > $o-tabrl.json 2> $o.log
      el "tabrl rc $?"
      timeout "$(left)" python3 tools/bench/bench_model_torch.py --shape "$shape" --reps 5 \
        --attns eager,sdpa > $o.json 2>> $o.log ;;
    generate)
      timeout "$(left)" node .gpu/bench-generate.mjs --shape "$shape" --batches 1,8,32 --reps 3 --lora \
        > $o-tabrl.json 2> $o.log
      el "tabrl rc $?"
      timeout "$(left)" python3 tools/bench/bench_generate_torch.py --shape "$shape" --batches 1,8,32 \
        --reps 3 --dtypes fp32,bf16 --configs eager,sdpa,sdpa-static > $o.json 2>> $o.log ;;
    *) echo "unknown part $part" >&2 ;;
  esac
  el "rc $?"
done
tail -n 4 $OUT/*.log
