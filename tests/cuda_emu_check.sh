#!/usr/bin/env bash
# The GPU test suites' verdicts without a GPU, in CI: each suite runs with
# the CUDA backend built for the CPU by tools/cuda_emu (every kernel's every
# thread runs on the host, cuBLAS's routines are computed there), with the
# OpCase tables on cuda:0 in strict device mode and the placement log on.
# A suite fails here where
# - one of its checks fails (a kernel's wrong value, a wrong error),
# - the emulator reports a kernel's fault ("cuda emulator:": a barrier or
#   shuffle not every thread reaches, a __trap, an access AddressSanitizer
#   faults, a data race) or refuses a launch as a GPU would ("refused
#   launch"),
# - an op runs on the CPU instead ("soft placement", "expected a kernel for"),
# - the emulator is not what ran ("no GPU"; no suite's placement log names
#   the emulated device), or its check did not (the AddressSanitizer
#   runtime, or the race check's count of launches), or the suite crashes or
#   runs past its time.
#
#   tests/cuda_emu_check.sh EMULATED_BACKEND LIBTAPEFLOW SUITE_BINARY...
#
# CUDA_EMU_ORDER=reverse (scheduler.cpp) runs each block's threads last to
# first, so that a stale read shows in the values too. With
# TF_GPU_ALLOCATOR=cuda_malloc each tensor is an allocation of its own, so
# that AddressSanitizer faults an access a byte past it; in the BFC arena the
# neighbouring chunk takes it silently.
set -uo pipefail
(($# >= 3)) || { echo "usage: $0 EMULATED_BACKEND LIBTAPEFLOW SUITE..." >&2; exit 2; }
backend=$1 library=$2
shift 2
# libtapeflow loads its modules from its own directory: it and its modules
# go in one directory ahead of the suites' RUNPATH, the emulated backend in
# place of the real one.
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
for module in "$(dirname "$(readlink -f "$library")")"/libtapeflow*.so; do
  ln -s "$module" "$dir/"
done
ln -sf "$(readlink -f "$backend")" "$dir/libtapeflow_cuda.so"
export LD_LIBRARY_PATH=$dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export TAPEFLOW_TEST_DEVICE=cuda TAPEFLOW_TEST_STRICT_DEVICE=1
export TAPEFLOW_LOG_PLACEMENT=1
# The emulated kernels are built with AddressSanitizer, whose runtime loads
# ahead of everything in the suites' processes (the leaks it would list are
# tapeflow's process-long singletons), or race-checked
# (tools/cuda_emu/racecheck), which prints its count of launches at exit.
asan=$(ldd "$backend" | awk '/libasan/ && $3 ~ /^\// { print $3 }')
preload=() checked=0
if [[ -n $asan ]]; then
  preload=("LD_PRELOAD=$asan") checked=1
elif ! nm "$backend" | grep ' t __tsan_init$' >/dev/null; then
  echo "FAIL: $backend is neither under AddressSanitizer nor race-checked"
  exit 1
fi
# A caller's options come last, and so win.
export ASAN_OPTIONS=detect_leaks=0:abort_on_error=1:allocator_may_return_null=1${ASAN_OPTIONS:+:$ASAN_OPTIONS}
failed=0 loaded=0
for suite in "$@"; do
  name=$(basename "$suite")
  log=$dir/$name.log
  start=$SECONDS
  timeout -k 10 "${CUDA_EMU_SUITE_TIMEOUT:-240}" \
    env "${preload[@]}" "$suite" >"$log" 2>&1
  status=$?
  problems=$(grep -E "cuda emulator: |ERROR: AddressSanitizer|refused launch|expected a kernel for cuda|, soft placement\)|but there is no GPU" "$log" |
    sort -u | head -5)
  grep -q "cuda emulator (kernels run on the host)" "$log" && loaded=1
  grep -qE "cuda emulator race check: [1-9]" "$log" && checked=1
  if ((status != 0)) || [[ -n $problems ]]; then
    echo "FAIL $name (exit $status, $((SECONDS - start)) s)${problems:+:}"
    [[ -n $problems ]] && echo "$problems"
    grep -E "ERROR|FAILED|CHECK|REQUIRE" "$log" | head -20
    tail -5 "$log"
    failed=1
  else
    echo "ok   $name ($((SECONDS - start)) s)"
  fi
done
if ((!loaded)); then
  echo "FAIL: no suite ran on the emulated backend"
  failed=1
fi
if ((!checked)); then
  echo "FAIL: $backend is neither under AddressSanitizer nor race-checked"
  failed=1
fi
exit $failed
