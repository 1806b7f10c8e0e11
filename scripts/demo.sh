#!/usr/bin/env bash
# scripts/demo.sh - the main job: build, start remora-server (a real GPU if one is
# present, else Remora's emulated GPU), and run tenants that share it at once:
# unmodified programs over both transports, then the multi-tenancy seed scenario
# (three inference tenants at 0.33, a burstable tenant reclaimed, a high-priority
# tenant preempting), then GPU time by compute share, ending with remora list.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/build.sh default
bin=build/bin
run=$(mktemp -d /tmp/remora-demo.XXXXXX)
sock=$run/gpu0.sock
# Open mode, with clients allowed to declare up to the whole GPU and high priority.
"$bin/remora-server" --device=auto --listen "unix:$sock" --grpc 127.0.0.1:0 \
  --metrics 127.0.0.1:0 --open-max-fraction 1 --open-max-priority high 2>"$run/server.log" &
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

# ---- The seed scenario: memory requests, a loan taken back, priority preemption ----
# Each tenant is host_threads -hog MIB: it allocates MIB, prints HOLDING (or REFUSED),
# and on a line from its FIFO synchronizes and prints what that returned (an evicted
# tenant learns it there).
usable_mib=$(( $(sed -n 's/.*usable_mem=\([0-9]*\).*/\1/p' "$run/server.log" | head -1) >> 20 ))
hold() {  # name, MiB, remora-run options...: start a holder; wait for its first line
  local name=$1 mib=$2; shift 2
  mkfifo "$run/$name.in"
  "$bin/remora" run --server "unix:$sock" "$@" -- "$progs/host_threads" -hog "$mib" \
    <"$run/$name.in" 2>&1 | while IFS= read -r l; do echo "$name | $l"; echo "$l" >>"$run/$name.out"; done &
  holders+=($!)
  eval "exec {fd_$name}>\"$run/$name.in\""
  for _ in $(seq 300); do [ -s "$run/$name.out" ] && break; sleep 0.1; done
}
holders=()
release() { for n in "$@"; do local v="fd_$n"; echo go >&"${!v}"; eval "exec ${!v}>&-"; done; }
mib() { echo $(( usable_mib * $1 / 100 )); }
echo "== seed scenario on a GPU of $usable_mib MiB usable =="
echo "-- a burstable tenant (request 0.25, limit 0.8) borrows 0.7 of the GPU while it is free"
hold burst "$(mib 70)" --gpu-fraction 0.25 --gpu-fraction-limit 0.8
echo "-- three inference tenants at 0.33 each; the first one's guaranteed memory is the loan"
hold infer1 "$(mib 32)" --gpu-fraction 0.33
hold infer2 "$(mib 32)" --gpu-fraction 0.33
hold infer3 "$(mib 32)" --gpu-fraction 0.33 --priority low
"$bin/remora" list --server "unix:$sock" | sed 's/^/list | /'
echo "-- a high-priority tenant at 0.5 arrives on a full GPU: lower priorities make room"
hold train "$(mib 48)" --gpu-fraction 0.5 --priority high
"$bin/remora" list --server "unix:$sock" | sed 's/^/list | /'
grep -E 'event=evicted' "$run/server.log" | sed 's/^/server | /' || true
echo "-- each tenant synchronizes: the reclaimed and preempted ones learn why"
release burst infer1 infer2 infer3 train
wait "${holders[@]}" 2>/dev/null || true
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
