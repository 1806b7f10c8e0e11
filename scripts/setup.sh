#!/usr/bin/env bash
# scripts/setup.sh - install what Remora needs to build and test, idempotently.
set -euo pipefail
pkgs=(cmake ninja-build g++ clang lld libclang-rt-14-dev clang-format
      libgrpc++-dev protobuf-compiler protobuf-compiler-grpc libprotobuf-dev
      libgtest-dev libgmock-dev libbenchmark-dev
      libzstd-dev liblz4-dev zlib1g-dev libyaml-cpp-dev
      libcpp-httplib-dev libbrotli-dev libssl-dev libopenblas-dev libdnnl-dev
      nlohmann-json3-dev python3-yaml openssl curl ca-certificates)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if ((${#missing[@]})); then
  sudo_=""; [ "$(id -u)" = 0 ] || sudo_=sudo
  $sudo_ apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_ apt-get install -y -qq "${missing[@]}"
fi
command -v nvcc >/dev/null || [ -x /usr/local/cuda/bin/nvcc ] || {
  echo "setup: the CUDA 13 toolkit (nvcc) is required at /usr/local/cuda" >&2; exit 1; }
# kubectl renders deploy/k8s (kustomize) in the tests; Debian's own is too old for it.
if ! command -v kubectl >/dev/null; then
  sudo_=""; [ "$(id -u)" = 0 ] || sudo_=sudo
  kver=v1.32.4
  curl -fsSLo /tmp/kubectl "https://dl.k8s.io/release/$kver/bin/linux/amd64/kubectl"
  $sudo_ install -m 0755 /tmp/kubectl /usr/local/bin/kubectl && rm -f /tmp/kubectl
fi
