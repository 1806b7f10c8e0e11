#!/usr/bin/env bash
# remora-node [serve|probe] - one remora-server per GPU of this node: the container
# command of the DaemonSet (deploy/k8s/base/remora-node.yaml).
#
# serve (default): GPUs are REMORA_GPUS (comma-separated indices) or every /dev/nvidiaN;
#   on an emulated node (REMORA_DEVICE=emu) without REMORA_GPUS, one GPU, index 0.
#   GPU N is served by `remora-server` with CUDA_VISIBLE_DEVICES=N on
#     unix:$REMORA_SOCKET_DIR/gpuN.sock            local tenants (shared memory)
#     $REMORA_GRPC_HOST:$((REMORA_GRPC_PORT + N))      remote tenants (gRPC)
#     $REMORA_METRICS_HOST:$((REMORA_METRICS_PORT + N)) Prometheus /metrics
#   with --tenants $REMORA_TENANTS when that file exists, --token $REMORA_GRPC_TOKEN and
#   --grace-period $REMORA_GRACE_PERIOD when set, --tls-cert/--tls-key $REMORA_TLS_DIR/tls.{crt,key} when both exist, and
#   $REMORA_EXTRA_ARGS. SIGTERM and SIGINT go to every server (each drains its
#   tenants), SIGHUP too (each reads its tenants file again). When one server exits the
#   others are stopped and the pod exits with its status, so the kubelet restarts it.
# probe: exit 0 if every GPU's server answers `remora list` on its socket (with
#   $REMORA_ADMIN_TOKEN when set); the DaemonSet's liveness and readiness probe.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
: "${REMORA_DEVICE:=auto}" "${REMORA_SOCKET_DIR:=/run/remora}"
: "${REMORA_GRPC_HOST:=0.0.0.0}" "${REMORA_GRPC_PORT:=7070}"
: "${REMORA_METRICS_HOST:=0.0.0.0}" "${REMORA_METRICS_PORT:=9400}"
: "${REMORA_TENANTS:=/etc/remora/tenants.yaml}" "${REMORA_TLS_DIR:=/etc/remora/tls}"

gpus() {
  if [ -n "${REMORA_GPUS:-}" ]; then
    tr ',' '\n' <<<"$REMORA_GPUS"
  elif compgen -G '/dev/nvidia[0-9]*' >/dev/null; then
    for d in /dev/nvidia[0-9]*; do echo "${d#/dev/nvidia}"; done | sort -n
  elif [ "$REMORA_DEVICE" = emu ]; then
    echo 0
  fi
}

mapfile -t ids < <(gpus)
for n in "${ids[@]}"; do
  [[ $n =~ ^[0-9]+$ ]] || { echo "remora-node: GPU index '$n' is not a number" >&2; exit 2; }
done
if ((${#ids[@]} == 0)); then
  echo "remora-node: no GPU found (no /dev/nvidiaN; set REMORA_GPUS, or REMORA_DEVICE=emu)" >&2
  exit 2
fi

if [ "${1:-serve}" = probe ]; then
  token=()
  [ -n "${REMORA_ADMIN_TOKEN:-}" ] && token=(--token "$REMORA_ADMIN_TOKEN")
  for n in "${ids[@]}"; do
    "$here/remora" list --server "unix:$REMORA_SOCKET_DIR/gpu$n.sock" "${token[@]}" >/dev/null ||
      { echo "remora-node: GPU $n's server does not answer" >&2; exit 1; }
  done
  exit 0
fi
[ "${1:-serve}" = serve ] || { echo "usage: remora-node [serve|probe]" >&2; exit 2; }

mkdir -p "$REMORA_SOCKET_DIR"
pids=()
for n in "${ids[@]}"; do
  args=(--device="$REMORA_DEVICE" --listen "unix:$REMORA_SOCKET_DIR/gpu$n.sock"
        --grpc "$REMORA_GRPC_HOST:$((REMORA_GRPC_PORT + n))"
        --metrics "$REMORA_METRICS_HOST:$((REMORA_METRICS_PORT + n))")
  [ -f "$REMORA_TENANTS" ] && args+=(--tenants "$REMORA_TENANTS")
  [ -n "${REMORA_GRPC_TOKEN:-}" ] && args+=(--token "$REMORA_GRPC_TOKEN")
  [ -n "${REMORA_GRACE_PERIOD:-}" ] && args+=(--grace-period "$REMORA_GRACE_PERIOD")
  [ -f "$REMORA_TLS_DIR/tls.crt" ] && [ -f "$REMORA_TLS_DIR/tls.key" ] &&
    args+=(--tls-cert "$REMORA_TLS_DIR/tls.crt" --tls-key "$REMORA_TLS_DIR/tls.key")
  # shellcheck disable=SC2206  # extra flags split on spaces, as a unit file would
  args+=(${REMORA_EXTRA_ARGS:-})
  echo "remora-node: GPU $n: remora-server ${args[*]}" >&2
  CUDA_VISIBLE_DEVICES=$n "$here/remora-server" "${args[@]}" &
  pids+=($!)
done

signal_all() { kill "-$1" "${pids[@]}" 2>/dev/null; }
stopping=0
trap 'stopping=1; signal_all TERM' TERM
trap 'stopping=1; signal_all INT' INT
trap 'signal_all HUP' HUP
# wait -n returns early (status > 128) when a trapped signal arrives; loop until a
# server has really exited.
while :; do
  wait -n "${pids[@]}"
  status=$?
  alive=()
  for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null && alive+=("$p"); done
  ((${#alive[@]} < ${#pids[@]})) && break
done
# Asked to stop: every server is draining already (a second SIGTERM would cut its
# drain short), so only wait. Otherwise one failed: stop the rest.
if ((!stopping)); then
  echo "remora-node: a server exited (status $status); stopping the others" >&2
  signal_all TERM
fi
for p in "${alive[@]}"; do
  wait "$p" 2>/dev/null
  s=$?
  ((s > status)) && status=$s
done
exit "$status"
