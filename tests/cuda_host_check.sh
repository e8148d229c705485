#!/usr/bin/env bash
# The CUDA backend's host side without a GPU, in CI: each GPU test suite runs
# over tools/cuda_host_stub's stand-in CUDA runtime, whose kernels never run
# (what the host reads back is 0, so the suites' own verdicts are ignored),
# with the
# OpCase tables on cuda:0 in strict device mode. Fails where a suite
# - launches a kernel as a GPU would refuse it (the stub's "refused launch":
#   an empty grid, a block over 1024 threads, past the grid's extents, over
#   48 KiB of dynamic shared memory),
# - runs an op with no CUDA kernel on the CPU (the placement log's "soft
#   placement"; strict mode's "expected a kernel for" in the OpCase tables),
# - sees no GPU (the stand-in runtime not taken),
# - crashes, or runs past its time.
#   tests/cuda_host_check.sh SUITE_BINARY...
# With CUDA_HOST_CHECK_ARGS set, each binary is a program given those
# arguments (word-split), which must also exit 0: a sample's GPU path.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
export CUDA_HOST_STUB_DIR=$logs/stub
export TAPEFLOW_TEST_DEVICE=cuda TAPEFLOW_TEST_STRICT_DEVICE=1
export TAPEFLOW_LOG_PLACEMENT=1
# The stand-in runtime first: a suite cannot tell its absence from a test
# failure (exit 1 either way).
"$root/tools/cuda_host_time.sh" true || {
  echo "FAIL: the stand-in CUDA runtime did not build"
  exit 1
}
failed=0
for suite in "$@"; do
  name=$(basename "$suite")
  log=$logs/$name.log
  # shellcheck disable=SC2086 # the arguments, one word each
  timeout -k 10 120 "$root/tools/cuda_host_time.sh" "$suite" \
    ${CUDA_HOST_CHECK_ARGS:-} >"$log" 2>&1
  status=$?
  # A test suite's checks fail on the stand-in's values (exit 1); a program
  # has none.
  allowed=$([[ -n ${CUDA_HOST_CHECK_ARGS:-} ]] && echo 0 || echo 1)
  problems=$(grep -E "cuda host stub: refused launch|expected a kernel for cuda|, soft placement\)|but there is no GPU" "$log" |
    sort -u | head -5)
  if ((status > allowed)) || [[ -n $problems ]]; then
    echo "FAIL $name (exit $status)${problems:+:}"
    [[ -n $problems ]] && echo "$problems"
    ((status > allowed)) && tail -5 "$log"
    failed=1
  else
    echo "ok   $name"
  fi
done
exit $failed
