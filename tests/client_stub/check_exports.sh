#!/bin/sh
# tests/client_stub/check_exports.sh - the stub's dynamic symbols: soname, versions, names.
# Usage: check_exports.sh path/to/libcudart.so.13
set -eu
lib="$1"
fail() { echo "FAIL: $*" >&2; exit 1; }

readelf -d "$lib" | grep -q 'SONAME.*\[libcudart\.so\.13\]' || fail "soname is not libcudart.so.13"
readelf -V "$lib" | grep -q 'Name: libcudart.so.13' || fail "no version definition libcudart.so.13"

# Defined dynamic symbols: "<version> <name>", one per line (the version's own entry skipped).
defined=$(objdump -T "$lib" | awk '$0 ~ /^[0-9a-f]+ / && $0 !~ /\*UND\*/ {print $(NF-1), $NF}' |
          grep -v '^libcudart.so.13 libcudart.so.13$' || true)
[ -n "$defined" ] || fail "no exported symbols"
bad_version=$(echo "$defined" | awk '$1 != "libcudart.so.13"')
[ -z "$bad_version" ] || fail "symbols without version libcudart.so.13: $bad_version"
bad_name=$(echo "$defined" | awk '{print $2}' | grep -v -E '^(cuda|__cuda)' || true)
[ -z "$bad_name" ] || fail "exported symbols that are not cuda*/__cuda*: $bad_name"
for sym in __cudaRegisterFatBinary __cudaRegisterFunction __cudaPushCallConfiguration \
           __cudaPopCallConfiguration __cudaGetKernel __cudaLaunchKernel cudaMalloc cudaMemcpy \
           cudaGetDeviceProperties cudaGetErrorString cudaStreamCreate cudaLaunchHostFunc \
           cudaMallocManaged cudaHostGetFlags cudaHostGetDevicePointer cudaMemPrefetchAsync \
           cudaMemAdvise cudaStreamBeginCapture cudaStreamIsCapturing cudaMemcpyPeer \
           cudaFuncGetName cudaGetDriverEntryPoint cudaDeviceGetCacheConfig; do
  echo "$defined" | grep -q " $sym\$" || fail "missing export $sym"
done
echo "ok: $(echo "$defined" | wc -l) symbols, all libcudart.so.13"
