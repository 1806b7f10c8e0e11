#!/usr/bin/env bash
# scripts/fuzz.sh [seconds-per-target] - build the libFuzzer targets (fuzz preset: clang,
# ASan+UBSan) and run each for a bounded time (default 60 s) on a copy of its seed corpus
# in tests/fuzz/corpus/. Fails on any crash, trap, leak, hang or sanitizer report, keeping
# the input under build-fuzz/artifacts/. One summary line per target: execs, exec/s,
# coverage. Runs up to FUZZ_JOBS targets at once (default: the number of cores).
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-60}
jobs=${FUZZ_JOBS:-$(nproc)}
start=$(date +%s)
./scripts/setup.sh
export PATH=/usr/local/cuda/bin:$PATH
cmake --preset fuzz >/dev/null
cmake --build --preset fuzz -j "$(nproc)"
built=$(date +%s)

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
artifacts=build-fuzz/artifacts
mkdir -p "$artifacts"

# One target per corpus folder; a folder without its fuzzer is an error, not a skip.
targets=()
for dir in tests/fuzz/corpus/*/; do
  targets+=("$(basename "$dir")")
done

run() {
  local t=$1
  local rc=0
  rm -f "$artifacts/$t"-*
  cp -r "tests/fuzz/corpus/$t" "$work/$t"
  # -timeout: one input running this long is a hang; -error_exitcode: any report fails.
  "build-fuzz/bin/fuzz_$t" -max_total_time="$secs" -rss_limit_mb=2048 -detect_leaks=1 \
    -timeout=25 -print_final_stats=1 -error_exitcode=77 -artifact_prefix="$artifacts/$t-" \
    "$work/$t" >"$work/$t.log" 2>&1 || rc=$?
  echo "$rc" >"$work/$t.rc"
}

for t in "${targets[@]}"; do
  [ -x "build-fuzz/bin/fuzz_$t" ] || { echo "fuzz: no fuzzer build-fuzz/bin/fuzz_$t" >&2; exit 1; }
  while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n || true; done
  run "$t" &
done
wait

failed=0
summary=()
for t in "${targets[@]}"; do
  log=$work/$t.log
  rc=$(cat "$work/$t.rc")
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log")
  last=$(grep -E '^#[0-9]+' "$log" | tail -n 1 || true)
  cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$last")
  ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$last")
  corp=$(sed -n 's/.* corp: \([0-9]*\)\/.*/\1/p' <<<"$last")
  verdict=ok
  if [ "$rc" != 0 ]; then
    verdict=FAILED
    failed=1
    echo "fuzz: $t exited $rc; the end of its log:" >&2
    tail -n 60 "$log" >&2
    for a in "$artifacts/$t"-*; do
      [ -f "$a" ] || continue
      echo "fuzz: input kept in $a (first 256 bytes):" >&2
      od -A x -t x1z -v -N 256 "$a" >&2
    done
  fi
  summary+=("$(printf 'fuzz: %-9s %-6s %9s execs %7s exec/s  cov %5s  features %6s  corpus %5s' \
    "$t" "$verdict" "${execs:-?}" "${rate:-?}" "${cov:-?}" "${ft:-?}" "${corp:-?}")")
done
printf '%s\n' "${summary[@]}"
echo "fuzz: ${#targets[@]} targets, $secs s each; built in $((built - start)) s, fuzzed in $(($(date +%s) - built)) s"
exit "$failed"
