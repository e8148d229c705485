#!/usr/bin/env bash
# Ctrl-C during training saves a checkpoint and exits 130; --resume picks it
# up. Skips (77) where the Fashion-MNIST files are not installed.
set -u
sample="$1"
data=/usr/share/datasets/fashion-mnist
[[ -f "$data/train-labels-idx1-ubyte.gz" ]] || exit 77
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
args=(--train-limit 3000 --batch-size 100 --threads 1 --checkpoint-dir "$dir")
timeout --preserve-status -s INT 4 "$sample" "${args[@]}" --epochs 1000 > "$dir/first.log" 2>&1
rc=$?
cat "$dir/first.log"
[[ $rc -eq 130 ]] || { echo "expected exit 130 after Ctrl-C, got $rc"; exit 1; }
ls "$dir"/ckpt-*.npz > /dev/null || { echo "no checkpoint after Ctrl-C"; exit 1; }
step=$(ls "$dir"/ckpt-*.npz | sed 's/.*ckpt-\([0-9]*\)\.npz/\1/' | sort -n | tail -1)
epochs=$(( step / 30 + 1 ))
"$sample" "${args[@]}" --epochs "$epochs" --resume > "$dir/second.log" 2>&1 || {
  cat "$dir/second.log"; echo "resumed run failed"; exit 1; }
cat "$dir/second.log"
grep -q "resumed from .*ckpt-$step.npz (step $step)" "$dir/second.log" ||
  { echo "expected a resume from step $step"; exit 1; }
grep -q "^final: test accuracy" "$dir/second.log" || { echo "no final line"; exit 1; }
