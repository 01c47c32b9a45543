#!/usr/bin/env bash
# Regenerates the cross-topology regret matrix of the README ("Cross-topology regret"):
# llama3-70b on 128 GPUs, each of four cluster presets searched, each one's best configuration
# run on the other three. Prints the README block (the matrix as ppsearch prints it).
#
# Usage (from the repository root, after building):  bash tools/regret-readme.sh [PPSEARCH]
#   PPSEARCH  the binary (default build/ci/bin/ppsearch)
set -euo pipefail
cd "$(dirname "$0")/.."
PPSEARCH=${1:-build/ci/bin/ppsearch}
CLUSTERS=${CLUSTERS:-h200-16gpu-ib,h200-16gpu-roce,h100-8gpu-ndr,gb200-nvl72}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmd=(--model llama3-70b --gpus 128 --regret-clusters "$CLUSTERS" --uncertainty-top 0)
"$PPSEARCH" "${cmd[@]}" --output "$tmp/regret.h5" > "$tmp/out.txt"
echo '```'
echo "\$ ppsearch ${cmd[*]}"
sed -n '/^cross-topology regret/,$p' "$tmp/out.txt"
echo '```'
