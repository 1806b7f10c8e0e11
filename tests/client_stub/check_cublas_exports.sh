#!/bin/sh
# tests/client_stub/check_cublas_exports.sh - the cuBLAS stub links and loads as NVIDIA's does.
# Usage: check_cublas_exports.sh path/to/libcublas.so.13 [NVIDIA's libcublas.so.13]
# Checks the soname and version node, that the exports are exactly NVIDIA's cublas* symbols
# (so a program linked against either binds to the same names and loads), and that the
# entry points the README promises are there.
set -eu
lib=$1
nvidia=${2:-}
fail() { echo "FAIL: $*"; exit 1; }
readelf -d "$lib" | grep -q 'SONAME.*\[libcublas\.so\.13\]' || fail "soname is not libcublas.so.13"
defined=$(objdump -T "$lib" | awk '$0 ~ /^[0-9a-f]+ / && $0 !~ /\*UND\*/ {print $(NF-1), $NF}' |
          grep -v '^libcublas.so.13 libcublas.so.13$' || true)
bad_version=$(echo "$defined" | awk '$1 != "libcublas.so.13"')
[ -z "$bad_version" ] || fail "symbols without version libcublas.so.13: $bad_version"
names=$(echo "$defined" | awk '{print $2}')
other=$(echo "$names" | grep -v '^cublas' || true)
[ -z "$other" ] || fail "exports beyond cublas*: $other"
if [ -n "$nvidia" ] && [ -f "$nvidia" ]; then
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  nm -D --defined-only "$nvidia" | awk '{print $3}' | sed 's/@.*//' | grep '^cublas' |
    sort -u > "$tmp/theirs"
  echo "$names" | sort -u > "$tmp/ours"
  extra=$(comm -23 "$tmp/ours" "$tmp/theirs")
  [ -z "$extra" ] || fail "not entry points of NVIDIA's libcublas.so.13: $extra"
  # ... and every one of NVIDIA's is there (forwarded, or refused by name).
  missing=$(comm -13 "$tmp/ours" "$tmp/theirs")
  [ -z "$missing" ] || fail "NVIDIA's entry points missing (regenerate cublas_refused.def): $missing"
fi
for f in cublasCreate_v2 cublasDestroy_v2 cublasSetStream_v2 cublasGetStream_v2 \
         cublasSetPointerMode_v2 cublasGetPointerMode_v2 cublasSetMathMode cublasGetMathMode \
         cublasSetWorkspace_v2 cublasGetVersion_v2 cublasGetProperty cublasGetStatusName \
         cublasGetStatusString cublasSetVector cublasGetVector cublasSetMatrix cublasGetMatrix \
         cublasSetVectorAsync cublasGetVectorAsync cublasSetMatrixAsync cublasGetMatrixAsync \
         cublasSaxpy_v2 cublasDdot_v2 cublasSnrm2_v2 cublasDscal_v2 cublasSasum_v2 \
         cublasIsamax_v2 cublasIdamin_v2 cublasScopy_v2 cublasDswap_v2 cublasSrot_v2 \
         cublasSgemv_v2 cublasDger_v2 cublasSsymv_v2 cublasDtrsv_v2 cublasSgemm_v2 \
         cublasDgemm_v2 cublasCgemm_v2 cublasZgemm_v2 cublasHgemm cublasSsymm_v2 cublasDsyrk_v2 \
         cublasStrsm_v2 cublasDtrmm_v2 cublasSgeam cublasDdgmm cublasGemmEx cublasSgemmBatched \
         cublasDgemmStridedBatched cublasGemmBatchedEx cublasGemmStridedBatchedEx \
         cublasSgetrfBatched cublasDgetrsBatched cublasSgetriBatched cublasDmatinvBatched; do
  echo "$names" | grep -qx "$f" || fail "missing $f"
done
readelf -d "$lib" | grep -q 'NEEDED.*\[libremora_client\.so\]' || fail "does not use libremora_client.so"
echo "PASS: $(echo "$names" | wc -l) cublas entry points"
