#!/usr/bin/env bash
# scripts/nvcc-cached.sh NVCC ARGS... - the build's nvcc for device code the tests load (PTX,
# cubins, fat binaries): runs NVCC ARGS, or copies the output (-o FILE) from a cache the build
# trees of one checkout share ($REMORA_NVCC_CACHE, default <checkout>/.cache/nvcc), so CI's
# sanitizer trees do not compile again what the default tree compiled. The key is nvcc's
# version, the arguments but the output's path, and the content of the source and of every
# header it includes (nvcc -M): any change misses.
set -euo pipefail
nvcc=$1
shift
args=() out="" sources=0
while (($#)); do
  case $1 in
    -o) out=$2; shift 2 ;;
    *.cu) sources=$((sources + 1)); args+=("$1"); shift ;;
    *) args+=("$1"); shift ;;
  esac
done
# One source file and one output: anything else is compiled as asked.
if [ -z "$out" ] || ((sources != 1)); then exec "$nvcc" "${args[@]}" ${out:+-o "$out"}; fi
cache=${REMORA_NVCC_CACHE:-$(cd "$(dirname "$0")/.." && pwd)/.cache/nvcc}
deps=$("$nvcc" -M "${args[@]}" 2>/dev/null | tr -d '\\\n' | sed 's/^[^:]*://' | tr ' ' '\n' |
  grep . | sort -u) || exec "$nvcc" "${args[@]}" -o "$out"
key=$({
  "$nvcc" --version
  printf '%s\n' "${args[@]}"
  # shellcheck disable=SC2086
  cat $deps
} | sha256sum | cut -c1-40)
if [ -f "$cache/$key" ]; then
  cp "$cache/$key" "$out"
  exit 0
fi
"$nvcc" "${args[@]}" -o "$out"
mkdir -p "$cache"
cp "$out" "$cache/$key.$$" && mv -f "$cache/$key.$$" "$cache/$key"
