#!/usr/bin/env bash
# The system packages the tests need on Debian/Ubuntu, installed when missing (as root, or
# with sudo): chromium (the e2e browser, and SwiftShader: WebGPU without a GPU) and
# libvulkan1 (the Vulkan loader Dawn uses in Node). `npm test` runs this first (pretest);
# .ci/run does the same. Elsewhere it says what is missing and leaves the rest to you.
set -euo pipefail
need=()
[ -x "${CHROMIUM_PATH:-/usr/bin/chromium}" ] || need+=(chromium)
if command -v ldconfig >/dev/null; then
	ldconfig -p | grep -q 'libvulkan.so.1' || need+=(libvulkan1)
fi
[ ${#need[@]} -eq 0 ] && exit 0
if ! command -v apt-get >/dev/null; then
	echo "tests need: ${need[*]} (install them with your package manager)" >&2
	exit 1
fi
sudo=()
[ "$(id -u)" -eq 0 ] || sudo=(sudo)
echo "installing ${need[*]} (needed by the tests)" >&2
"${sudo[@]}" apt-get update -qq
DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq "${need[@]}"
