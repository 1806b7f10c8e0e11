#!/usr/bin/env bash
# tests/emu_ptx/no_legacy_sse.sh ARCHIVE - fails if the interpreter, built for AVX, holds a legacy
# (non-VEX) SSE instruction outside host_cpu.cc (built for the baseline on purpose). On Intel hosts
# each such instruction among AVX ones pays an upper-state transition: one 16-byte move in inline
# asm made the scan benchmark four times slower there.
set -euo pipefail
archive=$1
command -v objdump >/dev/null || { echo "no objdump: skipped"; exit 0; }
# objdump prints "<member>:     file format ..." before each archive member's code.
found=$(objdump -d --no-show-raw-insn "$archive" | awk '
  /file format/ { member = $1; next }
  /^[0-9a-f]+ <.*>:$/ { fn = $2; next }
  member ~ /^host_cpu/ { next }
  /\t[a-uw-z][a-z0-9]* [^#]*%[xy]mm/ { print member " " fn ":" $0 }')
if [[ -n $found ]]; then
  echo "legacy SSE instructions in an AVX build of the interpreter:"
  echo "$found" | head -20
  exit 1
fi
echo "no legacy SSE instruction outside host_cpu.cc"
