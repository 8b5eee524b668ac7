# One GPU-machine call: the 2048 and inbox warm starts side by side, each
# packed into one archive in $OUT as soon as it is written (a call brings back few files).
#   bash ../shared/device/pack.sh tools/make-warm-start.ts
#   device run: bash tools/device/warm-starts.sh SECONDS   carry: [".gpu"]
# .gpu/run unpacks libraries (dpkg -x, ldconfig) on every call: two at once race on
# ld.so.cache, so it runs once and the jobs start node with its environment directly.
set -u
budget=$1
t0=$(date +%s)
mkdir -p .scratch/dev/ws
bash .gpu/run true
export PATH=/tmp/gpu-bin:$PATH NODE_PATH=$PWD/.gpu/node_modules
export VK_DRIVER_FILES=${VK_DRIVER_FILES:-/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json}
for env in 2048 inbox; do
  ( timeout "$budget" node .gpu/make-warm-start.mjs --env $env --out .scratch/dev/ws/$env --work .scratch/dev/ws-work-$env \
      > .scratch/dev/ws-$env.json 2> .scratch/dev/ws-$env.log; echo "rc $? at $(( $(date +%s) - t0 )) s" >> .scratch/dev/ws-$env.log
    tar czf $OUT/ws-$env.tgz -C .scratch/dev ws-$env.json ws-$env.log ws/$env ) &
  sleep 3
done
wait
for env in 2048 inbox; do tail -n 3 .scratch/dev/ws-$env.log; done
