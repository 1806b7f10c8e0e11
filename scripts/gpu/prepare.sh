#!/usr/bin/env bash
# scripts/gpu/prepare.sh [BUILD_DIR] - on the development machine, before a GPU session's one
# run: builds the native probes (green contexts, stream memory operations on pool memory,
# launches past the limits) against the CUDA toolkit's libcuda stub, and packs the build with
# ../shared/tools/gpu/bundle.sh, all into .gpu/ (git-ignored). Then, on the GPU machine
# (device tool, carry [".gpu"]):
#   mkdir -p /tmp/r && tar -C /tmp/r -xJf .gpu/bundle.tar.xz && bash scripts/gpu/run.sh
set -euo pipefail
root=$(git rev-parse --show-toplevel)
build=${1:-$root/build}
here=$root/scripts/gpu
out=$root/.gpu
grep -qx '/.gpu/' "$root/.git/info/exclude" 2>/dev/null ||
  { mkdir -p "$root/.git/info"; echo /.gpu/ >>"$root/.git/info/exclude"; }
mkdir -p "$out"
cuda=$(dirname "$(command -v nvcc)")/..
tmp=$(mktemp -d)
nvcc -cubin -arch=sm_90 -o "$tmp/chain.cubin" "$here/chain.cu"
python3 -c "
import sys
d = open(sys.argv[1], 'rb').read()
print('alignas(8) static const unsigned char chain_cubin[] = {' + ','.join(map(str, d)) + '};')
" "$tmp/chain.cubin" >"$tmp/chain_cubin.h"
for probe in green memop launch_errors; do
  g++ -std=c++20 -O2 -Wall -I"$cuda/include" -I"$tmp" "$here/$probe.cc" -o "$out/$probe" \
    -L"$cuda/lib64/stubs" -lcuda -lpthread
done
rm -rf "$tmp"
bash "$root/../shared/tools/gpu/bundle.sh" "$build" "$out"
