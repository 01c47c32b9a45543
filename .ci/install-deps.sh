#!/usr/bin/env bash
# Build/test dependencies for ppsearch from Debian 12 packages (run as root).
# The line verified in docs/environment.md §1, plus Google Benchmark, clang-format and
# clang 14 with its runtime (libFuzzer, ASan/UBSan) for the fuzz build (tests/fuzz),
# python3-matplotlib (tools/ppsearch-plot; its test tests/e2e/plots.sh skips without it) and
# python3-pandas (the README's example of reading a result file).
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "install-deps.sh: run as root (or install sudo)" >&2; exit 1; }
  SUDO="sudo -n"
fi
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends \
  cmake g++ make pkg-config libgtest-dev \
  libopenmpi-dev openmpi-bin \
  libboost-program-options-dev \
  libhdf5-openmpi-dev hdf5-tools \
  python3-h5py python3-matplotlib python3-pandas \
  slurm-wlm munge \
  libbenchmark-dev clang-format clang-14 libclang-rt-14-dev >/dev/null
