#!/usr/bin/env bash
# tests/fuzz/make_seeds.sh [build-dir] - regenerate tests/fuzz/corpus/ (then commit it).
#
# shm_ring, frame, request: written by fuzz_make_seeds (make_seeds.cc), built in
# build-dir (default: build, the default preset's). ptx: nvcc -ptx of small test
# programs; a NUL byte joins the two -rdc modules into one input. fatbin: the
# .nv_fatbin section of tests/fatbin/cu/saxpy.cu built by nvcc in several packagings.
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build}
corpus=tests/fuzz/corpus
export PATH=/usr/local/cuda/bin:$PATH
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

cmake --build "$build" --target fuzz_make_seeds
rm -rf "$corpus"/{shm_ring,frame,request,ptx,fatbin}
"$build"/bin/fuzz_make_seeds "$corpus"

mkdir -p "$corpus/ptx"
for cu in tests/cuda/kernels/{vector_add,histogram,warp_vote,reduce_shfl,symbols,dynamic_shared,struct_args,matmul_tiled,device_printf,atomics}.cu \
          tests/emu_ptx/kernels/{fp16,misc}.cu; do
  nvcc -arch=compute_75 -ptx "$cu" -o "$corpus/ptx/$(basename "$cu" .cu).ptx"
done
for part in rdc_a rdc_b; do
  nvcc -arch=compute_75 -rdc=true -ptx "tests/emu_ptx/kernels/$part.cu" -o "$tmp/$part.ptx"
done
{ cat "$tmp/rdc_a.ptx"; printf '\0'; cat "$tmp/rdc_b.ptx"; } >"$corpus/ptx/rdc_pair.ptx"

mkdir -p "$corpus/fatbin"
declare -A modes=([raw]=--no-compress [zstd]= [lz4]=-compress-mode=speed
                  [zlib]="-Xfatbin -compress-algo=1" [lz4frame]="-Xfatbin -compress-algo=3"
                  [ptx2]="-gencode arch=compute_86,code=compute_86 -gencode arch=compute_75,code=compute_75")
for mode in "${!modes[@]}"; do
  # shellcheck disable=SC2086 # the flags are words
  nvcc -c ${modes[$mode]} -o "$tmp/$mode.o" tests/fatbin/cu/saxpy.cu
  objcopy -O binary --only-section=.nv_fatbin "$tmp/$mode.o" "$corpus/fatbin/saxpy_$mode.fatbin"
done
nvcc -c -rdc=true -Xcompiler -fPIC -o "$tmp/rdc_a.o" tests/fatbin/cu/rdc_a.cu
objcopy -O binary --only-section=__nv_relfatbin "$tmp/rdc_a.o" "$corpus/fatbin/rdc_a.relfatbin"
du -sh "$corpus"/*
