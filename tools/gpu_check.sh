#!/usr/bin/env bash
# Every GPU check in one command (design: CUDA.md §6). GPU machines may lack
# our build dependencies and any network, so it has two steps:
#
#   tools/gpu_check.sh pack [BUILD_DIR]
#       here: builds BUILD_DIR (default build-gpu: sm_90, release, tests on)
#       and bundles libtapeflow{,_cuda}.so, the test and CUDA bench binaries
#       and their non-system libraries into .gpu/bundle.tar.gz (git-ignored;
#       refused above 48 MiB). CUDA's own libraries come from the GPU machine.
#   tools/gpu_check.sh run
#       on the GPU machine, from the repository root: unpacks the bundle and
#       runs each phase under its own timeout, carrying on after a failure:
#       preflight, test_cuda, every OpCase suite on the GPU in strict mode
#       (an op that soft-places fails), compute-sanitizer, the CUDA benchmarks
#       where built. Results (at most 8 files) go to $OUT, else ./gpu-results;
#       summary.txt ends "N passed, N failed" (doctest cases, and one per
#       sanitizer run). Only the tests set the exit status.
set -uo pipefail
cd "$(dirname "$0")/.."

# The OpCase tables and the other suites that run ops on a device.
suites=(tensor elementwise reduce shape linalg activations pool norm conv
        layers optim precision nan hardening placement device_memory)

pack() {
  local build=${1:-build-gpu}
  set -e
  if [[ ! -f $build/build.ninja ]]; then
    meson setup "$build" -Dgpu_archs=90 -Dbuildtype=release -Dcuda=enabled \
      -Dsamples=false -Dfuzz=disabled
  fi
  ninja -C "$build"
  local stage
  stage=$(mktemp -d)
  mkdir -p "$stage/bin" "$stage/lib"
  cp -L "$build"/src/libtapeflow.so "$build"/src/libtapeflow_cuda.so \
    "$stage/lib/"
  cp "$build"/tests/test_cuda "$stage/bin/"
  for s in "${suites[@]}"; do cp "$build/tests/test_$s" "$stage/bin/"; done
  [[ -x $build/benchmarks/tapeflow_bench_cuda ]] &&
    cp "$build/benchmarks/tapeflow_bench_cuda" "$stage/bin/"
  # Libraries outside glibc, the C++ runtime and CUDA: the GPU machine may
  # not have them (oneDNN, BLAS/LAPACK, libzip, protobuf, OpenMP, ...).
  local skip='^(linux-vdso|ld-linux|libc|libm|libdl|librt|libpthread|libgcc_s|libstdc\+\+|libcuda|libcudart|libcublas|libcublasLt|libnvrtc|libnccl)\.'
  for f in "$stage"/bin/* "$stage"/lib/*; do
    LD_LIBRARY_PATH="$stage/lib" ldd "$f" | awk '$3 ~ /^\// {print $1, $3}'
  done | sort -u | while read -r name path; do
    [[ $name =~ $skip ]] || [[ -e $stage/lib/$name ]] || cp -L "$path" "$stage/lib/$name"
  done
  mkdir -p .gpu
  tar -C "$stage" -czf .gpu/bundle.tar.gz bin lib
  rm -rf "$stage"
  local size
  size=$(stat -c %s .gpu/bundle.tar.gz)
  echo "gpu_check pack: .gpu/bundle.tar.gz, $((size / 1024 / 1024)) MiB"
  if ((size > 48 * 1024 * 1024)); then
    echo "gpu_check pack: over the 48 MiB budget" >&2
    return 1
  fi
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

  local s
  for s in "${suites[@]}"; do
    phase "$s" 150 opcase.txt env TAPEFLOW_TEST_DEVICE=cuda \
      TAPEFLOW_TEST_STRICT_DEVICE=1 "$bin/test_$s"
    count_doctest opcase.txt
  done

  local sanitizer
  sanitizer=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
  if [[ -x $sanitizer ]]; then
    for tool in memcheck racecheck; do
      if phase "compute-sanitizer $tool" 90 sanitizer.txt "$sanitizer" \
        --tool "$tool" --error-exitcode 1 "$bin/test_cuda"; then
        passed=$((passed + 1))
      else
        failed=$((failed + 1))
      fi
    done
  else
    echo "compute-sanitizer: not found" >>"$out/sanitizer.txt"
  fi

  if [[ -x $bin/tapeflow_bench_cuda ]]; then
    phase bench 180 bench.txt "$bin/tapeflow_bench_cuda" \
      --benchmark_out="$out/bench.json" --benchmark_out_format=json
  fi

  {
    grep -a -h '^=== ' "$out"/*.txt
    echo "$passed passed, $failed failed"
  } >"$out/summary.txt"
  rm -rf "$root"
  cat "$out/summary.txt"
  ((failed == 0 && passed > 0))
}

case "${1:-}" in
  pack) shift; pack "$@" ;;
  run) run ;;
  *) sed -n '2,18p' "$0"; exit 2 ;;
esac
