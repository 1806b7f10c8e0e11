#!/bin/sh
# tests/client_stub/check_library_exports.sh - a stub library links and loads as NVIDIA's does.
# Usage: check_library_exports.sh STUB SONAME PREFIX NVIDIA_LIB [REQUIRED_SYMBOL...]
# Checks the soname and version node (SONAME), that the exports are exactly NVIDIA's PREFIX*
# symbols (when NVIDIA_LIB exists: a program linked against either binds to the same names and
# loads; the stub refuses what it does not forward), that every REQUIRED_SYMBOL is there, and
# that the stub uses the process's one client core, libremora_client.so (directly, or through
# the stub libcudart.so.13 as libcurand's does).
set -eu
lib=$1 soname=$2 prefix=$3 nvidia=$4
shift 4
fail() { echo "FAIL: $*"; exit 1; }
readelf -d "$lib" | grep -q "SONAME.*\[$soname\]" || fail "soname is not $soname"
defined=$(objdump -T "$lib" | awk '$0 ~ /^[0-9a-f]+ / && $0 !~ /\*UND\*/ {print $(NF-1), $NF}' |
          grep -v "^$soname $soname\$" || true)
bad_version=$(echo "$defined" | awk -v v="$soname" '$1 != v')
[ -z "$bad_version" ] || fail "symbols without version $soname: $bad_version"
names=$(echo "$defined" | awk '{print $2}')
other=$(echo "$names" | grep -v "^$prefix" || true)
[ -z "$other" ] || fail "exports beyond $prefix*: $other"
if [ -f "$nvidia" ]; then
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  nm -D --defined-only "$nvidia" | awk '{print $3}' | sed 's/@.*//' | grep "^$prefix" |
    sort -u > "$tmp/theirs"
  echo "$names" | sort -u > "$tmp/ours"
  extra=$(comm -23 "$tmp/ours" "$tmp/theirs")
  [ -z "$extra" ] || fail "not entry points of NVIDIA's $soname: $extra"
  missing=$(comm -13 "$tmp/ours" "$tmp/theirs")
  [ -z "$missing" ] || fail "NVIDIA's entry points missing (regenerate the refused list): $missing"
fi
for f in "$@"; do
  echo "$names" | grep -qx "$f" || fail "missing $f"
done
readelf -d "$lib" | grep -qE 'NEEDED.*\[(libremora_client\.so|libcudart\.so\.13)\]' ||
  fail "uses neither libremora_client.so nor the stub libcudart.so.13 over it"
echo "PASS: $(echo "$names" | wc -l) $prefix entry points"
