#!/bin/sh
# tests/client_stub/check_exports.sh - the stub's dynamic symbols: soname, versions, names.
# Usage: check_exports.sh path/to/libcudart.so.13 [NVIDIA's libcudart.so.13]
# With NVIDIA's library, every cuda* entry point it exports must be exported too (forwarded,
# or refused by name: cudart_refused.def), so a program linked against it loads.
set -eu
lib="$1"
nvidia="${2:-}"
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
if [ -n "$nvidia" ] && [ -f "$nvidia" ]; then
  theirs=$(nm -D --defined-only "$nvidia" | awk '{print $3}' | sed 's/@.*//' | grep '^cuda' | sort -u)
  ours=$(echo "$defined" | awk '{print $2}' | sort -u)
  missing=$(printf '%s\n' "$theirs" | grep -vxF "$ours" || true)
  [ -z "$missing" ] || fail "NVIDIA's entry points missing (regenerate cudart_refused.def): $missing"
fi
# One client core per process: libcudart.so.13 uses libremora_client.so (beside it) and carries
# no copy of the connection or of the generated wire messages, so later stub libraries
# (cuBLAS, cuDNN) share its session, connection and pointer table.
readelf -d "$lib" | grep -q 'NEEDED.*\[libremora_client\.so\]' || fail "does not use libremora_client.so"
core="$(dirname "$lib")/libremora_client.so"
[ -f "$core" ] || fail "no libremora_client.so beside $lib"
# (Inline functions of the headers may be emitted in both at -O0; what must not be is state:
# the connection and table singletons, the messages' default instances and descriptors.)
copies=$(nm "$lib" | awk '$2 ~ /^[TtDdBbRrVv]$/ {print $3}' |
         grep -E '^_ZN6remora11client_stub(10Connection3GetEv|2StEv)$|^_ZN6remora2v1[0-9]+_[A-Za-z]+_default_instance_E$|descriptor_table_remora_2fv1_2f[a-z_]+proto(_once)?$' || true)
[ -z "$copies" ] || fail "client-core state defined inside $lib: $copies"
nm -D --defined-only "$core" | grep -q '_ZN6remora11client_stub10Connection3GetEv' ||
  fail "libremora_client.so does not export Connection::Get"
bad_core=$(nm -D --defined-only "$core" | awk '{print $3}' | grep -vE '^_Z(N|NK|TVN|TIN|TSN|THN|TWN)6remora|remora_2fv1|^REMORA_CLIENT|^_ZN6google8protobuf5Arena18CreateMaybeMessageIN6remora' || true)
# (and protobuf's arena constructors of the wire messages, which repeated message fields use)
[ -z "$bad_core" ] || fail "libremora_client.so exports names outside namespace remora: $bad_core"
echo "ok: $(echo "$defined" | wc -l) symbols, all libcudart.so.13; one client core"
