# One GPU-machine call: the decode benchmark (TabRL and transformers' generate side by side,
# both shapes, batch 1/8/32, fp32 and bf16 on the torch side) and the PEFT round trip.
# Results land in $OUT; BENCHMARKS.md reads them.
#   bash ../shared/device/pack.sh tools/bench/bench-generate.ts tools/parity/peft-roundtrip.ts
#   device run: bash tools/device/decode-and-peft.sh   carry: [".gpu"]   (about 450 s)
t0=$(date +%s)
el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
el decode-ts-qwen
timeout 110 bash .gpu/run node .gpu/bench-generate.mjs --shape qwen2.5-0.5b --batches 1,8,32 --reps 2 --lora > $OUT/gen-ts-qwen.json 2> $OUT/gen-ts-qwen.log; el "rc $?"
el decode-ts-smollm
timeout 90 bash .gpu/run node .gpu/bench-generate.mjs --shape smollm2-135m --batches 1,8,32 --reps 2 --lora > $OUT/gen-ts-smollm.json 2> $OUT/gen-ts-smollm.log; el "rc $?"
el gen-torch
timeout 290 python3 tools/bench/bench_generate_torch.py --batches 1,8,32 --reps 1 --warmup 1 --dtypes fp32,bf16 --configs eager > $OUT/gen-torch.json 2> $OUT/gen-torch.log; el "rc $?"
el peft
rm -rf /tmp/rt
timeout 30 bash .gpu/run node .gpu/peft-roundtrip.mjs export /tmp/rt 2> $OUT/peft.log && timeout 50 python3 tools/parity/peft_roundtrip.py /tmp/rt 2>> $OUT/peft.log && timeout 25 bash .gpu/run node .gpu/peft-roundtrip.mjs import /tmp/rt > $OUT/peft-roundtrip.json 2>> $OUT/peft.log; el "rc $?"
tail -n 3 $OUT/gen-ts-qwen.log $OUT/gen-ts-smollm.log; tail -n 14 $OUT/gen-torch.log; tail -n 5 $OUT/peft.log
