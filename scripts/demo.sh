#!/usr/bin/env bash
# scripts/demo.sh - the main job: build, start remora-server (a real GPU if one is
# present, else Remora's emulated GPU), and run tenants that share it at once.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/build.sh default
bin=build/bin
run=$(mktemp -d /tmp/remora-demo.XXXXXX)
sock=$run/gpu0.sock
"$bin/remora-server" --device=auto --listen "unix:$sock" --grpc 127.0.0.1:0 \
  --metrics 127.0.0.1:0 2>"$run/server.log" &
server=$!
trap 'kill $server 2>/dev/null; wait $server 2>/dev/null; rm -rf "$run"' EXIT
for _ in $(seq 100); do grep -q event=ready "$run/server.log" && break; sleep 0.1; done
grep -E 'comp=(device|server)' "$run/server.log" | sed 's/^/server | /'
port=$(sed -n 's/.*transport=grpc .*port=\([0-9]*\).*/\1/p' "$run/server.log" | head -1)

demo() {  # name, remora-run options..., -- program args...
  local name=$1; shift
  "$bin/remora" run "$@" 2>&1 | sed "s/^/$name | /"
}
progs=build/cuda
echo "== three tenants share the GPU: two local (shared memory), one remote (gRPC) =="
demo tenant-a --server "unix:$sock" --gpu-fraction 0.25 --gpu-fraction-limit 0.5 -- "$progs/device_query" &
demo tenant-b --server "unix:$sock" --gpu-memory 2Gi -- "$progs/vector_add" &
demo tenant-c --server "grpc://127.0.0.1:$port" --gpu-memory 1Gi -- "$progs/matmul_tiled" &
wait %2 %3 %4 2>/dev/null || true
echo "== programs built like real projects: Thrust/CUB, and a separable CMake project (9 architectures) =="
demo tenant-d --server "unix:$sock" --gpu-memory 1Gi -- "$progs/thrust_cub" &
d=$!
demo tenant-e --server "grpc://127.0.0.1:$port" --gpu-memory 1Gi -- "$progs/separable/separable" &
e=$!
wait $d $e || true
echo "== GPU time by compute share: two busy tenants at 0.15 and 0.45, as remora list sees them =="
demo tenant-f --server "unix:$sock" --gpu-compute 0.15 -- "$progs/host_threads" -busy 4 &
f=$!
demo tenant-g --server "unix:$sock" --gpu-compute 0.45 -- "$progs/host_threads" -busy 4 &
g=$!
sleep 3
"$bin/remora" list --server "unix:$sock" | sed 's/^/list | /'
mport=$(sed -n 's/.*transport=metrics .*port=\([0-9]*\).*/\1/p' "$run/server.log" | head -1)
exec 3<>"/dev/tcp/127.0.0.1/$mport"
printf 'GET /metrics HTTP/1.0\r\n\r\n' >&3
grep -E '^remora_tenant_(achieved_share|gpu_seconds_total)' <&3 | sed 's/^/metrics | /' || true
exec 3<&-
wait $f $g || true
echo "== server log =="
grep -E 'comp=session' "$run/server.log" | sed 's/^/server | /'
