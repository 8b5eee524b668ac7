# One GPU-machine call: the export round trip. A run exported from the page (its zip), its
# adapter loaded by peft onto the base (PeftModel.from_pretrained, AutoPeftModelForCausalLM as
# exported and given the base's folder), and `cli export --merge` of it loaded by transformers,
# all against TabRL's logprobs (1e-4 max abs). Results land in $OUT (about 60 s).
#   bash ../shared/device/pack.sh tools/parity/export-roundtrip.ts
#   device run: bash tools/device/export-peft.sh   carry: [".gpu"]
# $OUT/export-report.json: the verdict ("pass"); export-tabrl.json: the TabRL half's report;
# export.log: both halves' progress; plan.json and each case's tabrl-logprobs.json and
# adapter_config.json, to read the numbers against.
t0=$(date +%s)
el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
rm -rf /tmp/er
el tabrl-export
timeout 60 bash .gpu/run node .gpu/export-roundtrip.mjs export /tmp/er > $OUT/export-tabrl.json 2> $OUT/export.log; el "rc $?"
el python
timeout 90 python3 tools/parity/export_roundtrip.py /tmp/er > $OUT/export-python.json 2>> $OUT/export.log; el "rc $?"
cp /tmp/er/plan.json /tmp/er/export-report.json $OUT/ 2>/dev/null
for c in llama qwen2; do
  mkdir -p $OUT/$c
  cp /tmp/er/$c/tabrl-logprobs.json $OUT/$c/ 2>/dev/null
  cp /tmp/er/$c/export/export-$c/checkpoints/0002/adapter_config.json $OUT/$c/ 2>/dev/null
done
grep -v 'Loading weights' $OUT/export.log | tail -n 20
python3 -c "import json,sys; r=json.load(open('$OUT/export-report.json')); print('export round trip:', 'PASS' if r['pass'] else 'FAIL', r['device'], r['versions'])" 2>&1
