#!/usr/bin/env bash
# A sample given --device cuda:0 where no GPU is visible exits 2 with one
# line naming the device count, before it loads data or trains; a malformed
# device name exits 2 too. CUDA_VISIBLE_DEVICES="" hides every GPU, so this
# holds on machines with GPUs as well.
#   sample_device_missing.sh SAMPLE [ARGS...]
set -u
sample="$1"
shift
args=("$@")
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

# expect_exit_2 NAME PREFIX DEVICE: stderr is one line starting with PREFIX.
expect_exit_2() {
  local name=$1 prefix=$2 device=$3
  CUDA_VISIBLE_DEVICES= "$sample" "${args[@]}" --device "$device" >"$dir/out" 2>"$dir/err"
  local rc=$?
  if [[ $rc -ne 2 ]]; then
    echo "$name: expected exit 2, got $rc"; cat "$dir/out" "$dir/err"; exit 1
  fi
  if [[ $(wc -l <"$dir/err") -ne 1 ]]; then
    echo "$name: expected one line on stderr, got:"; cat "$dir/err"; exit 1
  fi
  if [[ $(head -c ${#prefix} "$dir/err") != "$prefix" ]]; then
    echo "$name: expected stderr starting with '$prefix', got:"; cat "$dir/err"
    exit 1
  fi
  if grep -q -E '^(epoch|step|final)' "$dir/out"; then
    echo "$name: trained although the device is missing:"; cat "$dir/out"
    exit 1
  fi
  echo "$name: $(cat "$dir/err")"
}

expect_exit_2 "missing GPU" \
  "[--device] expected a CUDA device, got cuda:0 on a machine with 0 CUDA devices" \
  cuda:0
expect_exit_2 "malformed name" \
  '[parse_device] expected "cpu", "cpu:0", "cuda" or "cuda:N", got "gpu0"' gpu0
