#!/usr/bin/env bash
# Fault handling end to end, with mpirun on this machine:
#  1. a rank SIGKILLed at step 5 ends the job (non-zero) in under 10 s, and
#     tools/tapeflow-run resumes it from the checkpoint to the same final
#     parameters as an uninterrupted run;
#  2. a rank that stops itself (SIGSTOP) is caught by the watchdog: the job
#     ends with status 75 in under 6 s of the stop (TAPEFLOW_DIST_TIMEOUT=3),
#     with DDP and with plain all_reduce calls (whose first completed
#     collective ends the first-step timeout);
#  3. a TAPEFLOW_DIST_TIMEOUT that is not a number of seconds is refused.
# usage: faults.sh <mpirun> <fault_job> <tapeflow-run>
set -uo pipefail
mpirun=$1 job=$2 run=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
final() { grep -o 'final [0-9a-f]*' "$1" | tail -1; }

"$mpirun" -np 3 "$job" "$work/clean" 8 >"$work/clean.out" 2>&1 ||
  { cat "$work/clean.out"; fail "the uninterrupted run failed"; }
want=$(final "$work/clean.out")
[[ -n $want ]] || fail "the uninterrupted run printed no final hash"
echo "uninterrupted: $want"

TPF_TEST_KILL=2:5 "$run" --max-restarts 2 --kill-after 5 -- \
  "$mpirun" -np 3 "$job" "$work/killed" 8 >"$work/killed.out" 2>&1
status=$?
cat "$work/killed.out" | grep -E '^\[(tapeflow-run|dist)\]|final'
((status == 0)) || fail "tapeflow-run ended with status $status"
first=$(grep -o 'attempt 1 ended with status [0-9]* after [0-9.]* s' "$work/killed.out")
[[ -n $first ]] || fail "the killed attempt did not fail"
seconds=${first##* after }
seconds=${seconds% s}
awk -v s="$seconds" 'BEGIN { exit !(s < 10) }' ||
  fail "the job took $seconds s to end after a rank died (limit 10 s)"
got=$(final "$work/killed.out")
[[ $got == "$want" ]] || fail "resumed to '$got', uninterrupted gave '$want'"

hung_rank() {  # $1: label, then environment assignments
  local label=$1 out="$work/stopped-$1.out"
  shift
  local started=$EPOCHREALTIME
  env "$@" TAPEFLOW_DIST_TIMEOUT=3 TPF_TEST_STOP=1:3 \
    "$mpirun" -np 3 "$job" "$work/stopped-$label" 8 >"$out" 2>&1
  local status=$?
  local seconds
  seconds=$(awk -v a="$started" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')
  grep -E '^\[dist\]' "$out"
  echo "hung rank ($label): status $status after $seconds s"
  ((status == 75)) || { cat "$out"; fail "expected the watchdog's status 75, got $status"; }
  grep -q 'has waited .* past the 3 s timeout' "$out" ||
    fail "no watchdog message naming the op"
  awk -v s="$seconds" 'BEGIN { exit !(s < 8) }' ||
    fail "the hung job took $seconds s (start-up plus 3 s timeout; limit 8 s)"
}
hung_rank ddp
hung_rank plain TPF_TEST_PLAIN=1

TAPEFLOW_DIST_TIMEOUT=5abc "$mpirun" -np 1 "$job" "$work/bad-timeout" 1 \
  >"$work/bad-timeout.out" 2>&1 && fail "TAPEFLOW_DIST_TIMEOUT=5abc was accepted"
grep -q "\[init\] expected TAPEFLOW_DIST_TIMEOUT to be a number of seconds > 0, got '5abc'" \
  "$work/bad-timeout.out" || { cat "$work/bad-timeout.out"; fail "no error naming TAPEFLOW_DIST_TIMEOUT"; }
echo "PASS"
