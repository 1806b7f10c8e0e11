#!/bin/sh
# tests/client_stub/check_nvml_exports.sh - the NVML stub is loadable as NVIDIA's is.
# Usage: check_nvml_exports.sh path/to/libnvidia-ml.so.1
# Checks the soname, that every defined dynamic symbol is an nvml* function, and that
# the entry points monitoring tools look up are there.
set -eu
lib=$1
fail() { echo "FAIL: $*"; exit 1; }
readelf -d "$lib" | grep -q 'SONAME.*\[libnvidia-ml\.so\.1\]' || fail "soname is not libnvidia-ml.so.1"
defined=$(nm -D --defined-only "$lib" | awk '{print $3}')
other=$(echo "$defined" | grep -v '^nvml' || true)
[ -z "$other" ] || fail "exports beyond nvml*: $other"
for f in nvmlInit_v2 nvmlInit nvmlShutdown nvmlErrorString nvmlDeviceGetCount_v2 \
         nvmlDeviceGetHandleByIndex_v2 nvmlDeviceGetName nvmlDeviceGetUUID \
         nvmlDeviceGetMemoryInfo nvmlDeviceGetMemoryInfo_v2 nvmlDeviceGetUtilizationRates \
         nvmlDeviceGetComputeRunningProcesses_v3 nvmlSystemGetDriverVersion; do
  echo "$defined" | grep -qx "$f" || fail "missing $f"
done
echo "PASS: $(echo "$defined" | wc -l) nvml entry points"
