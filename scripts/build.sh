#!/usr/bin/env bash
# scripts/build.sh [preset] - install dependencies, configure and build (default preset: default).
set -euo pipefail
cd "$(dirname "$0")/.."
preset=${1:-default}
./scripts/setup.sh
export PATH=/usr/local/cuda/bin:$PATH
cmake --preset "$preset" >/dev/null
cmake --build --preset "$preset" -j "$(nproc)"
