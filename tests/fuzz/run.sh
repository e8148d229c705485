#!/usr/bin/env bash
# Runs one libFuzzer target for a while from its seed corpus:
#   tests/fuzz/run.sh <fuzzer binary> <seed corpus dir> [seconds, default 30]
# The seeds are copied to a scratch corpus (the repository's stays as it is).
# Exit 0 when the time ran out without a finding; otherwise libFuzzer's exit
# status, with the crashing input left in $FUZZ_ARTIFACTS (default: a
# directory under /tmp, printed). `meson test -C build --suite fuzz` runs every
# target this way.
set -euo pipefail
fuzzer=$1
seeds=$2
seconds=${3:-30}
work=$(mktemp -d "${TMPDIR:-/tmp}/tpf_fuzz.XXXXXX")
artifacts=${FUZZ_ARTIFACTS:-$work/artifacts}
mkdir -p "$work/corpus" "$artifacts"
cleanup() { rm -rf "$work/corpus"; }
trap cleanup EXIT
cp -r "$seeds"/. "$work/corpus/"
# Leaks are checked; the readers' expected errors are C++ exceptions.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1}
echo "fuzzing $(basename "$fuzzer") for ${seconds}s (artifacts: $artifacts)"
set +e
# libFuzzer's own exit status for a finding is 77, which meson reads as
# SKIP: findings must fail the test.
"$fuzzer" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
  -error_exitcode=1 -timeout_exitcode=1 \
  -max_len=65536 -print_final_stats=1 -artifact_prefix="$artifacts/" \
  "$work/corpus" >"$work/log" 2>&1
status=$?
set -e
# The progress lines are many; the end has the stats or the report.
grep -v -E '^#[0-9]+[[:space:]]+(NEW|REDUCE|pulse)' "$work/log" | tail -n 80 || true
if [[ $status -ne 0 ]]; then
  echo "FAILED: $(basename "$fuzzer") exit $status; inputs in $artifacts:"
  ls -l "$artifacts"
  exit "$status"
fi
rm -rf "$work"
