#!/usr/bin/env bash
# Every GPU check in one command (design: CUDA.md §6). GPU machines may lack
# our build dependencies and any network, so it has two steps:
#
#   tools/gpu_check.sh pack [BUILD_DIR]
#       here: builds BUILD_DIR (default build-gpu: sm_90, release, tests on)
#       and bundles libtapeflow{,_cuda}.so, the test and CUDA bench binaries,
#       mnist_cnn with a Fashion-MNIST subset, and their non-system libraries
#       into .gpu/bundle.tar.gz (git-ignored; refused above 48 MiB). CUDA's
#       own libraries come from the GPU machine.
#   tools/gpu_check.sh run
#       on the GPU machine, from the repository root: unpacks the bundle and
#       runs each phase under its own timeout, carrying on after a failure:
#       preflight, test_cuda and test_cuda_ops, every OpCase suite on the
#       GPU in strict mode (an op that soft-places fails), compute-sanitizer
#       on both CUDA tests, the CUDA benchmarks where built and their
#       PyTorch peer where torch imports, mnist_cnn --device cuda:0 (no op
#       soft-placed; 400 steps). Results (at most 8 files) go to $OUT, else
#       ./gpu-results; summary.txt ends "N passed, N failed" (doctest cases,
#       one per sanitizer run, two for mnist_cnn). Only the tests set the
#       exit status.
set -uo pipefail
cd "$(dirname "$0")/.."

# The OpCase tables and the other suites that run ops on a device.
suites=(tensor elementwise reduce shape linalg activations pool norm conv
        layers optim precision nan hardening placement device_memory
        data_device)

pack() {
  local build=${1:-build-gpu}
  set -e
  if [[ ! -f $build/build.ninja ]]; then
    meson setup "$build" -Dgpu_archs=90 -Dbuildtype=release -Dcuda=enabled \
      -Dsamples=true -Ddist=disabled -Dfuzz=disabled
  fi
  ninja -C "$build"
  local stage
  stage=$(mktemp -d)
  mkdir -p "$stage/bin" "$stage/lib"
  cp -L "$build"/src/libtapeflow.so "$build"/src/libtapeflow_cuda.so \
    "$stage/lib/"
  cp "$build"/tests/test_cuda "$build"/tests/test_cuda_ops "$stage/bin/"
  for s in "${suites[@]}"; do cp "$build/tests/test_$s" "$stage/bin/"; done
  [[ -x $build/benchmarks/cuda/tapeflow_bench_cuda ]] &&
    cp "$build/benchmarks/cuda/tapeflow_bench_cuda" "$stage/bin/"
  pack_cnn_sample "$build" "$stage"
  # Libraries outside glibc, the C++ runtime and CUDA: the GPU machine may
  # not have them (oneDNN, BLAS/LAPACK, libzip, protobuf, OpenMP, ...).
  local skip='^(linux-vdso|ld-linux|libc|libm|libdl|librt|libpthread|libgcc_s|libstdc\+\+|libcuda|libcudart|libcublas|libcublasLt|libnvrtc|libnccl)\.'
  # Debian's reference BLAS and LAPACK where present: where OpenBLAS is the
  # alternative (the benchmark peers install it), libblas.so.3 would bring
  # its 36 MB into the bundle, and only CPU-side float64 tests use BLAS.
  local reference_blas=/usr/lib/x86_64-linux-gnu/blas:/usr/lib/x86_64-linux-gnu/lapack
  for f in "$stage"/bin/* "$stage"/lib/*; do
    LD_LIBRARY_PATH="$stage/lib:$reference_blas" ldd "$f" | awk '$3 ~ /^\// {print $1, $3}'
  done | sort -u | while read -r name path; do
    [[ $name =~ $skip ]] || [[ -e $stage/lib/$name ]] || cp -L "$path" "$stage/lib/$name"
  done
  mkdir -p .gpu
  tar -C "$stage" -czf .gpu/bundle.tar.gz bin lib $(cd "$stage" && ls -d data 2>/dev/null)
  rm -rf "$stage"
  local size
  size=$(stat -c %s .gpu/bundle.tar.gz)
  echo "gpu_check pack: .gpu/bundle.tar.gz, $((size / 1024 / 1024)) MiB"
  if ((size > 48 * 1024 * 1024)); then
    echo "gpu_check pack: over the 48 MiB budget" >&2
    return 1
  fi
}

# The CNN sample (built without tpf::dist, so no MPI travels) and the
# Fashion-MNIST it trains on, cut to the first 12800 training images (200
# steps of 64) and the whole test split: 9.6 MiB gzipped. All of it (29.5
# MiB) would not fit the budget beside the binaries.
pack_cnn_sample() {
  local build=$1 stage=$2 fashion=/usr/share/datasets/fashion-mnist
  if [[ ! -x $build/samples/mnist_cnn ]]; then
    echo "gpu_check pack: no $build/samples/mnist_cnn (samples off), not bundled"
    return 0
  fi
  if [[ ! -f $fashion/train-images-idx3-ubyte.gz ]]; then
    echo "gpu_check pack: no Fashion-MNIST in $fashion (apt install" \
      "dataset-fashion-mnist), mnist_cnn not bundled"
    return 0
  fi
  cp "$build/samples/mnist_cnn" "$stage/bin/"
  mkdir -p "$stage/data/fashion-mnist"
  cp "$fashion"/t10k-*-ubyte.gz "$stage/data/fashion-mnist/"
  python3 - "$fashion" "$stage/data/fashion-mnist" 12800 <<'PY'
import gzip, sys
src, dst, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
# IDX: magic, count (big-endian), then rows and columns for images.
for name, header in (("train-images-idx3-ubyte", 16), ("train-labels-idx1-ubyte", 8)):
    with gzip.open(f"{src}/{name}.gz") as f:
        data = f.read()
    record = 1
    for at in range(8, header, 4):
        record *= int.from_bytes(data[at:at + 4], "big")
    with gzip.open(f"{dst}/{name}.gz", "wb") as f:
        f.write(data[:4] + n.to_bytes(4, "big") + data[8:header + n * record])
PY
}

out=${OUT:-./gpu-results}
passed=0
failed=0

# phase NAME SECONDS FILE COMMAND...: runs under timeout, output to $out/FILE.
phase() {
  local name=$1 seconds=$2 file=$3
  shift 3
  local start=$SECONDS status
  {
    echo "=== $name (limit ${seconds}s): $*"
    timeout "$seconds" "$@" 2>&1
    status=$?
    echo "=== $name: exit $status after $((SECONDS - start))s"
    return $status
  } >>"$out/$file"
}

# Counts the doctest summary line of the last run appended to FILE.
count_doctest() {
  local line
  line=$(grep -a '\[doctest\] test cases:' "$out/$1" | tail -n 1)
  if [[ -z $line ]]; then
    failed=$((failed + 1))  # crashed or timed out before its summary
    return
  fi
  passed=$((passed + $(sed -E 's/.*\| *([0-9]+) passed.*/\1/' <<<"$line")))
  failed=$((failed + $(sed -E 's/.*\| *([0-9]+) failed.*/\1/' <<<"$line")))
}

run() {
  mkdir -p "$out"
  local root
  root=$(mktemp -d)
  tar -C "$root" -xzf .gpu/bundle.tar.gz || {
    echo "gpu_check run: no .gpu/bundle.tar.gz (run pack first)" | tee "$out/summary.txt"
    return 1
  }
  export LD_LIBRARY_PATH="$root/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  export OMP_NUM_THREADS=${OMP_NUM_THREADS:-4}
  local bin=$root/bin

  phase preflight 10 preflight.txt bash -c "nvidia-smi; ldd '$bin/test_cuda' \
    '$root/lib/libtapeflow_cuda.so' | grep -E 'not found|cuda|cublas' ; \
    command -v cuobjdump >/dev/null && cuobjdump --list-elf '$root/lib/libtapeflow_cuda.so'"

  phase test_cuda 60 test_cuda.txt "$bin/test_cuda"
  count_doctest test_cuda.txt
  phase test_cuda_ops 60 test_cuda.txt "$bin/test_cuda_ops"
  count_doctest test_cuda.txt

  local s
  for s in "${suites[@]}"; do
    phase "$s" 150 opcase.txt env TAPEFLOW_TEST_DEVICE=cuda \
      TAPEFLOW_TEST_STRICT_DEVICE=1 "$bin/test_$s"
    count_doctest opcase.txt
  done

  local sanitizer
  sanitizer=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
  if [[ -x $sanitizer ]]; then
    local tool test
    for tool in memcheck racecheck; do
      for test in test_cuda test_cuda_ops; do
        if phase "compute-sanitizer $tool $test" 90 sanitizer.txt \
          "$sanitizer" --tool "$tool" --error-exitcode 1 "$bin/$test"; then
          passed=$((passed + 1))
        else
          failed=$((failed + 1))
        fi
      done
    done
  else
    echo "compute-sanitizer: not found" >>"$out/sanitizer.txt"
  fi

  if [[ -x $bin/tapeflow_bench_cuda ]]; then
    phase bench 180 bench.txt "$bin/tapeflow_bench_cuda" \
      --benchmark_out="$out/bench.json" --benchmark_out_format=json
  fi

  if [[ -x $bin/tapeflow_bench_cuda ]] && python3 -c "import torch" 2>/dev/null; then
    phase "torch peer" 120 bench.txt python3 tools/gpu_peer_cnn.py \
      --tapeflow-json "$out/bench.json"
  fi

  if [[ -x $bin/mnist_cnn && -d $root/data/fashion-mnist ]]; then
    cnn_on_gpu "$bin/mnist_cnn" "$root/data/fashion-mnist" "$root/placement.log"
  fi

  {
    grep -a -h '^=== ' "$out"/*.txt
    # The training results and the PyTorch comparison, where they ran.
    grep -a -h -E '^(final:|train_step_cnn_[0-9]+: torch|ops placed:)' \
      "$out"/*.txt 2>/dev/null
    echo "$passed passed, $failed failed"
  } >"$out/summary.txt"
  rm -rf "$root"
  cat "$out/summary.txt"
  ((failed == 0 && passed > 0))
}

# mnist_cnn --device cuda:0, two tests: a short run under the placement log
# passes when no op soft-places onto the CPU; then 400 steps (2 epochs of the
# bundled 12800 images) and the test accuracy on all 10000 test images.
cnn_on_gpu() {
  local cnn=$1 data=$2 log=$3
  if phase "mnist_cnn placement" 120 train.txt bash -c '
      TAPEFLOW_LOG_PLACEMENT=1 "$1" --device cuda:0 --data-dir "$2" \
        --epochs 1 --train-limit 128 --seed 1 >/dev/null 2>"$3"
      status=$?
      grep -av " -> " "$3"  # whatever else it wrote there: errors
      echo "ops placed: $(grep -ac " -> " "$3"), soft-placed onto the CPU:" \
        "$(grep -ac "soft placement" "$3")"
      grep -a "soft placement" "$3"
      ((status == 0)) && ! grep -aq "soft placement" "$3"' \
    _ "$cnn" "$data" "$log"; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
  fi
  if phase "mnist_cnn train" 240 train.txt "$cnn" --device cuda:0 \
    --data-dir "$data" --epochs 2 --train-limit 12800 --seed 1; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
  fi
}

case "${1:-}" in
  pack) shift; pack "$@" ;;
  run) run ;;
  *) sed -n '2,21p' "$0"; exit 2 ;;
esac
