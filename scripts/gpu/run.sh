#!/usr/bin/env bash
# scripts/gpu/run.sh [SECTIONS] - on a GPU machine, from the repository root, after
# prepare.sh's bundle is unpacked at $R (default /tmp/r/gpu): Remora's own checks beside
# ../shared/tools/gpu/check.sh. Results, one line each as they come, in $OUT/remora.txt;
# server logs and per-program output in $OUT/remora.tgz. Sections (default all, in order):
#   probes    native: green contexts (green), stream memory operations on pool memory (memop),
#             cuLaunchKernel past the device's limits (launch_errors)
#   start     eight tenants started together: each one's wall time, the arena registrations
#             that held a thread over 20 ms, each tenant's page-locked host memory
#   launch    launch_count (200,000 empty-ish launches, one stream): rate and the launching
#             thread's CPU per launch natively, through Remora's stub and under NVIDIA's static
#             runtime over Remora's driver, with the server's CPU seconds per thread meanwhile
#   programs  test programs built on NVIDIA's runtime and libraries: native, then through Remora
#   torch     PyTorch in depth under remora run --gpu-memory 8Gi, native first, then with
#             --remote-libs cublas (cuBLAS served by the server's)
#   shares    alone; 0.2 / 0.6; 0.09 / 0.81; a limit of 0.3; 8 equal tenants; the pairs with
#             --time-slice 0 and 32: kernel rates and device time charged from 3 s to 6 s in
#   priority  a high tenant's latency alone and beside a saturating low one, without and
#             with --reserve-sms 8, and natively
#   fault     a bystander, a faulting tenant, the next tenant and the supervisor's restart
# All of them may pass one device call's 600 s (torch alone up to 340 s): run
# "probes start launch programs torch" in one call and "shares priority fault" in the next.
set -u
R=${R:-/tmp/r/gpu}; G=$(cd "$(dirname "$0")" && pwd); P=$(cd "$G/../.." && pwd)/.gpu
OUT=${OUT:-/tmp/gpu-out}; mkdir -p "$OUT/f"
SECTIONS=${1:-probes start launch programs torch shares priority fault}
want() { [[ " $SECTIONS " == *" $1 "* ]]; }
T0=$(date +%s)
log() { echo "[$(( $(date +%s) - T0 ))] $*" >>"$OUT/remora.txt"; }
libdir() { find /usr/local /opt /usr/lib -name "$1" -not -path '*/stubs/*' 2>/dev/null | head -1 | xargs -r dirname; }
NV=""
for so in libcudart.so.13 libcublas.so.13 libcudnn.so.9 libcufft.so.12 libcurand.so.10 libcusparse.so.12 libcusolver.so.12 libnvJitLink.so.13; do
  d=$(libdir "$so"); [ -n "$d" ] && [[ ":$NV:" != *":$d:"* ]] && NV="${NV:+$NV:}$d"
done
tmp=$(mktemp -d); sock=$tmp/gpu0.sock; srv=0; S="unix:$sock"
start_server() {  # start_server NAME ARGS...
  local name=$1; shift
  LD_LIBRARY_PATH="$R/lib/deps:$NV" "$R/bin/remora-server" --device="${DEV:-cuda}" --listen "$S" \
    --open-max-fraction 1 --open-max-priority high --metrics 127.0.0.1:9464 "$@" \
    >"$OUT/f/server.$name.log" 2>&1 &
  srv=$!
  for _ in $(seq 300); do grep -q event=ready "$OUT/f/server.$name.log" && break; sleep 0.05; done
}
stop_server() { kill "$srv" 2>/dev/null; wait "$srv" 2>/dev/null; rm -f "$sock"; }
# Waits for the background tenants, never for the server (a bare `wait` would).
wait_kids() { local j; for j in $(jobs -p); do [ "$j" != "$srv" ] && wait "$j"; done; }
trap 'kill $srv 2>/dev/null' EXIT
export LD_LIBRARY_PATH="$R/lib/deps:$NV"
rate() { timeout 40 "$R/bin/remora" run --server "$S" "$@" 2>&1 | tail -1 | awk '{print $4}'; }
gpu_time() { awk 'NR>2 {print $2, $NF}' "$1" | sed 's/s$//'; }  # tenant, GPU-TIME seconds
delta() {  # device time each tenant was charged between two lists, per second of 3
  paste <(gpu_time "$1") <(gpu_time "$2") | awk '{printf "%s %.3f  ", $1, ($4-$2)/3}'
}
lists() {  # two `remora list`s, 3 s and 6 s from now
  sleep 3; "$R/bin/remora" list --server "$S" >"$tmp/l1" 2>&1
  sleep 3; "$R/bin/remora" list --server "$S" >"$tmp/l2" 2>&1
}
stalls() {  # the server's count of items let past a stalled in-flight bound
  python3 -c "import urllib.request as u; print(' '.join(l for l in u.urlopen('http://127.0.0.1:9464/metrics', timeout=5).read().decode().splitlines() if l.startswith('remora_stall')))" 2>&1 | tail -1
}
ratio() { python3 -c "import sys; a, b = map(float, sys.argv[1:]); print(round(b / a, 3) if a else 0)" "$@"; }
pair() {  # pair LABEL A B: two saturating tenants at compute shares A and B
  (rate --gpu-compute "$2" -- "$R/probe" busy 7 20000 >"$tmp/a") &
  (rate --gpu-compute "$3" -- "$R/probe" busy 7 20000 >"$tmp/b") &
  lists; cp "$tmp/l2" "$OUT/f/list.$1"; wait_kids
  log "$1 ($2 vs $3): kernels/s $(cat "$tmp/a") / $(cat "$tmp/b") = 1:$(ratio "$(cat "$tmp/a")" "$(cat "$tmp/b")"), total $(ratio "$ALONE" "$(python3 -c "print($(cat "$tmp/a") + $(cat "$tmp/b"))")") of alone; device time 3-6 s: $(delta "$tmp/l1" "$tmp/l2")"
}
latency() { timeout 30 "$R/bin/remora" run --server "$S" --priority high -- "$R/probe" latency 2000 2>&1 | tail -1; }
prio() {  # prio LABEL
  local al lo
  al=$(latency)
  (rate --priority low -- "$R/probe" busy 5 20000 >"$tmp/pb") & sleep 1.2
  lo=$(latency); wait_kids
  log "$1: high alone $al | beside low busy $lo | low busy kernels/s $(cat "$tmp/pb")"
}

if want probes; then
  for p in memop green launch_errors; do timeout 60 "$P/$p" >>"$OUT/remora.txt" 2>&1 || log "$p: rc=$?"; done
fi
start_server main
if want start; then
  for i in 1 2 3 4 5 6 7 8; do
    (t=$(date +%s.%N); timeout 30 "$R/bin/remora" run --server "$S" -- "$R/probe" busy 2 20000 \
       >/dev/null 2>&1; python3 -c "print(round($(date +%s.%N) - $t, 2))" >"$tmp/st$i") &
  done
  sleep 1; "$R/bin/remora" list --server "$S" >"$tmp/sl" 2>&1; wait_kids
  log "8 started together, seconds each: $(cat "$tmp"/st? | tr '\n' ' ')| registrations over 20 ms: $(grep -c 'slow_driver_call call=cuMemHostRegister' "$OUT/f/server.main.log") | PINNED: $(awk 'NR>2 {print $10}' "$tmp/sl" | tr '\n' ' ')"
fi
snap() {  # snap PID: "name ticks" for each of its threads
  local f
  for f in /proc/"$1"/task/*/stat; do sed -E 's/^[0-9]+ \(([^)]*)\) (.*)$/\1 \2/' "$f" |
    awk '{print $1, $14 + $15}'; done 2>/dev/null
}
cpu_by_name() {  # cpu_by_name BEFORE AFTER: CPU seconds per thread name between two snaps
  awk -v hz="$(getconf CLK_TCK)" 'NR==FNR {b[$1]+=$2; next} {a[$1]+=$2}
    END {for (k in a) if (a[k]-b[k] > 0) printf "%s %.3f s  ", k, (a[k]-b[k])/hz}' "$1" "$2"
}
if want launch; then
  o=$(cd "$tmp" && timeout 60 env LD_LIBRARY_PATH="$NV" "$R/cuda/launch_count" -n 200000 2>&1)
  log "launch_count native: $(echo "$o" | tr '\n' ' ' | cut -c1-160)"
  for p in launch_count launch_count_nvrt; do
    w=$(pgrep -P "$srv" | head -1); w=${w:-$srv}; snap "$w" >"$tmp/c0"; t=$(date +%s.%N)
    o=$(cd "$tmp" && timeout 60 "$R/bin/remora" run --server "$S" -- "$R/cuda/$p" -n 200000 2>&1)
    snap "$w" >"$tmp/c1"
    log "$p shm: $(echo "$o" | tr '\n' ' ' | cut -c1-160) | $(python3 -c "print(round($(date +%s.%N) - $t, 2))") s | server CPU: $(cpu_by_name "$tmp/c0" "$tmp/c1")"
  done
fi
if want programs; then
  for p in nvidia_cublas nvidia_cufft device_assert_nvrt driver_api driver_tables texture_nvrt \
           vector_add_static vector_add_nvidia_cudart hopper_nvrt cublaslt_matmul cudnn_ops \
           graphs_nvrt graph_conditional_nvrt vmm_nvrt cublas_routines cublas_level2 cublas_api64 \
           cublas_legacy; do
    [ -x "$R/cuda/$p" ] || { log "$p: not bundled"; continue; }
    o=$(cd "$tmp" && timeout 30 env LD_LIBRARY_PATH="$NV" "$R/cuda/$p" 2>&1); rc=$?
    echo "$o" >"$OUT/f/$p.native"; line="$p | native rc=$rc $(echo "$o" | tail -1 | cut -c1-70)"
    o=$(cd "$tmp" && timeout 30 "$R/bin/remora" run --server "$S" -- "$R/cuda/$p" 2>&1); rc=$?
    echo "$o" >"$OUT/f/$p.shm"; log "$line | shm rc=$rc $(echo "$o" | tail -1 | cut -c1-70)"
  done
  o=$(cd "$tmp" && timeout 30 "$R/bin/remora" run --server "$S" --remote-libs cublas -- \
      "$R/cuda/nvidia_cublas" 2>&1); rc=$?
  log "nvidia_cublas --remote-libs cublas | shm rc=$rc $(echo "$o" | tail -1 | cut -c1-70)"
fi
if want torch; then
  o=$(timeout 100 env -u LD_LIBRARY_PATH python3 "$G/torch_check.py" 2>&1); echo "$o" >"$OUT/f/torch.native"
  log "PyTorch native:"; echo "$o" | grep -E "^(OK|FAIL|MEMINFO)" | cut -c1-200 >>"$OUT/remora.txt"
  o=$(timeout 120 env REMORA_TRACE_DRIVER=1 "$R/bin/remora" run --server "$S" --gpu-memory 8Gi -- \
      python3 "$G/torch_check.py" 2>&1); echo "$o" >"$OUT/f/torch.remora"
  log "PyTorch under remora run --gpu-memory 8Gi:"
  echo "$o" | grep -E "^(OK|FAIL|MEMINFO)" | cut -c1-200 >>"$OUT/remora.txt"
  echo "$o" | grep "^remora:" | sort | uniq -c | head -12 >>"$OUT/remora.txt"
  o=$(timeout 120 "$R/bin/remora" run --server "$S" --gpu-memory 8Gi --remote-libs cublas -- \
      python3 "$G/torch_check.py" 2>&1); echo "$o" >"$OUT/f/torch.remote"
  log "PyTorch under remora run --gpu-memory 8Gi --remote-libs cublas:"
  echo "$o" | grep -E "^(OK|FAIL|MEMINFO)" | cut -c1-200 >>"$OUT/remora.txt"
  echo "$o" | grep "^remora:" | sort | uniq -c | head -12 >>"$OUT/remora.txt"
fi
if want shares; then
  ALONE=$(rate -- "$R/probe" busy 3 20000); log "alone: $ALONE kernels/s"
  pair 1:3 0.2 0.6
  pair 1:9 0.09 0.81
  (rate --gpu-compute 0.3 --gpu-compute-limit 0.3 -- "$R/probe" busy 7 20000 >"$tmp/l") &
  lists; wait_kids
  log "limit 0.3 alone: $(ratio "$ALONE" "$(cat "$tmp/l")") of the rate alone; device time 3-6 s: $(delta "$tmp/l1" "$tmp/l2")"
  for i in 1 2 3 4 5 6 7 8; do (rate --gpu-compute 0.1 -- "$R/probe" busy 12 20000 >"$tmp/e$i") & done
  sleep 5; lists; wait_kids
  log "8 equal: device time 8-11 s: $(delta "$tmp/l1" "$tmp/l2"); $(stalls)"
  python3 - "$ALONE" "$tmp"/e? <<'PY' >>"$OUT/remora.txt"
import sys
alone = float(sys.argv[1]); x = [float(open(f).read() or 0) for f in sys.argv[2:]]
print("8 equal kernels/s", x, "Jain %.4f" % (sum(x) ** 2 / (len(x) * sum(v * v for v in x))),
      "total %.3f of alone" % (sum(x) / alone))
PY
  stop_server; start_server ts0 --time-slice 0; pair "1:3 --time-slice 0" 0.2 0.6
  stop_server; start_server ts32 --time-slice 32; pair "1:3 --time-slice 32" 0.2 0.6
  stop_server; start_server main2
fi
if want priority; then
  al=$(timeout 30 env LD_LIBRARY_PATH="$NV" "$R/probe" latency 2000 2>&1 | tail -1)
  (timeout 20 env LD_LIBRARY_PATH="$NV" "$R/probe" busy 5 20000 >/dev/null 2>&1) & sleep 1
  lo=$(timeout 30 env LD_LIBRARY_PATH="$NV" "$R/probe" latency 2000 2>&1 | tail -1); wait_kids
  log "native: alone $al | beside busy $lo"
  prio "no reservation"
  stop_server; start_server reserve --reserve-sms 8
  log "$(grep -E 'sm_reservation' "$OUT/f/server.reserve.log" | cut -c1-160)"
  prio "--reserve-sms 8"
  stop_server; start_server main3
fi
if want fault; then
  (timeout 20 "$R/bin/remora" run --server "$S" -- "$R/probe" busy 4 20000 >"$tmp/fb" 2>&1) & sleep 1.5
  f=$(timeout 20 "$R/bin/remora" run --server "$S" -- "$R/cuda/illegal_address" 2>&1 | tail -1); wait_kids
  t0=$(date +%s.%N); n=$(timeout 30 "$R/bin/remora" run --server "$S" -- "$R/cuda/vector_add" 2>&1 | tail -1)
  log "fault: culprit $f | bystander $(tail -1 "$tmp/fb" | cut -c1-80) | next $n ($(python3 -c "print(round($(date +%s.%N) - $t0, 2))") s) | $(cat "$OUT"/f/server.main*.log | grep -E 'worker_ended|event=restart' | cut -c1-140 | tr '\n' ' ')"
fi
stop_server
log "done"
grep -hE 'level=(warn|error)' "$OUT"/f/server.*.log | grep -v slow_driver_call | cut -c1-300 | head -30 >>"$OUT/remora.txt"
tar -C "$OUT" -czf "$OUT/remora.tgz" f && rm -rf "$OUT/f"
