#!/usr/bin/env bash
# scripts/test.sh [preset] - build everything and run the whole test suite:
# unit tests per module and the CUDA programs against a live server over shm
# and gRPC. Presets: default, asan (ASan+UBSan), tsan (ThreadSanitizer).
set -euo pipefail
cd "$(dirname "$0")/.."
preset=${1:-default}
./scripts/build.sh "$preset"
ctest --preset "$preset" -j "$(nproc)"
