#!/usr/bin/env bash
# The CLI installed as a tool: the committed tree in a temp folder, `npm ci --omit=dev` (no
# devDependencies), then `cli play` and a one-step `cli train` there (WebGPU on whatever this
# machine has: SwiftShader in CI). Fails if a run-time import is only a devDependency.
set -euo pipefail
root=$(git rev-parse --show-toplevel)
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
git -C "$root" archive HEAD | tar -x -C "$dir"
cd "$dir"
npm ci --omit=dev --no-audit --no-fund --loglevel=error
[ ! -d node_modules/vitest ] || { echo "check-install: devDependencies were installed" >&2; exit 1; }
npm run -s cli -- play --env tictactoe --policy random --games 20 > play.json
grep -q '"games":20' play.json || { echo "check-install: play said $(cat play.json)" >&2; exit 1; }
npm run -s cli -- train --env letters --out runs/letters --steps 1 --groups 1 --group-size 2 \
	--eval-every 0 --max-no-signal 16 > train.json
grep -q '"status":"done"' train.json || { echo "check-install: train said $(cat train.json)" >&2; exit 1; }
echo "check-install: npm ci --omit=dev, then cli play and cli train ran ($(cat train.json))"
