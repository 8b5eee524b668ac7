# One GPU-machine call: the PEFT round trip (issue 5, item 4) in the background of a
# tic-tac-toe sweep (tictactoe-sweep.sh: same CONFIGS, FROM and TL). The round trip's
# report and log go into the sweep's runs.tgz (.scratch/peft*) beside its reports.
#   bash ../shared/device/pack.sh experiments/learn-tictactoe.ts scripts/parity/peft-roundtrip.ts
#   device run: FROM=d CONFIGS="e:--lr 1e-4;..." TL=520 bash experiments/tictactoe/peft-and-sweep.sh
#               carry: [".gpu", ".ttt-state"]
bash .gpu/run true
export PATH=/tmp/gpu-bin:$PATH NODE_PATH=$PWD/.gpu/node_modules
export VK_DRIVER_FILES=${VK_DRIVER_FILES:-/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json}
mkdir -p .scratch
(
  rm -rf /tmp/rt
  timeout 60 node .gpu/peft-roundtrip.mjs export /tmp/rt 2> .scratch/peft.log &&
    timeout 150 python3 scripts/parity/peft_roundtrip.py /tmp/rt 2>> .scratch/peft.log &&
    timeout 60 node .gpu/peft-roundtrip.mjs import /tmp/rt > .scratch/peft-roundtrip.json 2>> .scratch/peft.log
  echo "peft round trip: rc $?" >> .scratch/peft.log
) &
peft=$!
RUN=true bash experiments/tictactoe/tictactoe-sweep.sh
wait $peft
grep -E "pass|FAIL|rc" .scratch/peft.log | grep -v Loading
