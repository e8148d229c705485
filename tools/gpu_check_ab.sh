# shellcheck shell=bash
# Two versions' CUDA benchmarks on one GPU machine, alternated, for
# tools/gpu_check.sh (sourced by it). The device tool lends a fresh machine
# to each session, and the same kernel's time moves by 10-40 % from one
# machine to the next (stop 36: small_ops_1K_pipelined 4.1-4.8 us per op on
# two machines, 5.9-6.0 on two others), so a change smaller than that is
# measured against its base on the same machine, in the same call.
#
#   tools/gpu_check.sh pack-ab BASE [BUILD_DIR]
#       here: BASE is a build directory of the other version, or a git
#       revision, which gets a worktree in ${TMPDIR:-/tmp}/tapeflow-ab-REV
#       and a build there with pack's options. Builds the CUDA benchmark
#       and libraries in BASE and BUILD_DIR (default build-gpu) and bundles
#       each version's libtapeflow*.so and tapeflow_bench_cuda (base/,
#       new/) with the other libraries they need (common/) into
#       .gpu-ab/ab.tar.xz.
#   tools/gpu_check.sh ab [FILTER] [ROUNDS]
#       on the GPU machine, with carry [".gpu-ab"] (18 MB; beside .gpu,
#       whose bundle and data leave no room for it in one call): ROUNDS (default 4) rounds,
#       base then new and new then base in turn, of tapeflow_bench_cuda
#       --benchmark_filter=FILTER (default: every case) with 3 repetitions
#       each. $OUT/ab.txt: each case's median over the rounds per version
#       and new/base; $OUT/ab.csv: every median. The run keeps to
#       GPU_CHECK_BUDGET seconds (default 420) and stops between rounds.

# The targets a version's bundle half needs.
ab_targets=(src/libtapeflow.so src/libtapeflow_xsmm.so src/libtapeflow_cuda.so
            benchmarks/cuda/tapeflow_bench_cuda)

# ab_build SOURCE BUILD: the benchmark and its libraries built in BUILD
# (set up from SOURCE with pack's options where it is not a build directory
# yet).
ab_build() {
  local source=$1 build=$2
  if [[ -f $build/build.ninja ]]; then
    meson configure "$build" "${pack_options[@]}" >/dev/null
  else
    meson setup "$build" "$source" "${pack_options[@]}" >/dev/null
  fi
  refresh_cuda_objects "$build" "$source"
  # An older revision may lack a target (LIBXSMM's module): only known ones.
  ninja -C "$build" build.ninja >/dev/null
  local known t targets=()
  known=$(ninja -C "$build" -t targets all | cut -d: -f1)
  for t in "${ab_targets[@]}"; do
    grep -qxF "$t" <<<"$known" && targets+=("$t")
  done
  ninja -C "$build" "${targets[@]}"
  [[ -x $build/benchmarks/cuda/tapeflow_bench_cuda ]] || {
    echo "gpu_check pack-ab: no tapeflow_bench_cuda in $build (Google" \
      "Benchmark not found?)" >&2
    return 1
  }
}

# ab_stage BUILD DEST: one version's libraries and benchmark into DEST.
ab_stage() {
  local build=$1 dest=$2 so
  mkdir -p "$dest/lib" "$dest/bin"
  for so in "$build"/src/libtapeflow*.so; do
    [[ $so == */libtapeflow_dist* ]] || cp -L "$so" "$dest/lib/"
  done
  cp "$build/benchmarks/cuda/tapeflow_bench_cuda" "$dest/bin/"
}

pack_ab() {
  local base=${1:?gpu_check pack-ab: BASE (a build directory or a git revision)}
  local build=${2:-build-gpu}
  set -e
  local base_source
  if [[ -d $base ]]; then
    base_source=$(python3 -c 'import json, sys
print(json.load(open(sys.argv[1]))["directories"]["source"])' \
      "$base/meson-info/meson-info.json")
  else
    local rev
    rev=$(git rev-parse --short "$base^{commit}")
    base_source=${TMPDIR:-/tmp}/tapeflow-ab-$rev
    if [[ ! -d $base_source ]]; then
      git worktree prune  # one whose directory a reboot removed
      git worktree add --detach "$base_source" "$rev"
    fi
    base=$base_source/build-gpu
  fi
  ab_build "$base_source" "$base"
  ab_build . "$build"
  local stage
  stage=$(mktemp -d)
  ab_stage "$base" "$stage/base"
  ab_stage "$build" "$stage/new"
  mkdir -p "$stage/common" .gpu-ab
  local v
  for v in base new; do
    bundle_libraries "$stage" "$stage/common" "$stage/$v/lib" \
      "$stage/$v"/bin/* "$stage/$v"/lib/*
  done
  tar -C "$stage" -cf - . | xz -6 -T0 >.gpu-ab/ab.tar.xz
  rm -rf "$stage"
  check_carry_size .gpu-ab
}

run_ab() {
  local filter=${1:-.} rounds=${2:-4}
  mkdir -p "$out"
  rm -f "$out/ab.csv" "$out/ab.txt"
  root=$(mktemp -d)
  trap finish EXIT
  local bundle=${GPU_CHECK_BUNDLE:-.gpu-ab/ab.tar.xz}
  if ! unpack "$bundle" "$root"; then
    echo "gpu_check ab: no bundle $bundle (run pack-ab here first; the device" \
      "call needs carry [\".gpu-ab\"])" | tee "$out/ab.txt"
    return 1
  fi
  nvidia-smi -L | tee "$out/ab.txt"
  local -A libpath
  local round v order=(base new) failed=0
  for v in base new; do
    libpath[$v]=$(cuda_library_path "$root/$v/lib:$root/common")
  done
  for ((round = 1; round <= rounds; ++round)); do
    # A round takes about what the first one took: stop before one that
    # would run past the budget.
    if ((round > 1 && (SECONDS - t0) * round / (round - 1) > budget)); then
      echo "gpu_check ab: stopped after $((round - 1)) rounds (budget)" |
        tee -a "$out/ab.txt"
      break
    fi
    for v in "${order[@]}"; do
      local left=$((budget - (SECONDS - t0) - 10))
      ((left >= 5)) || break 2
      env LD_LIBRARY_PATH="${libpath[$v]}" TAPEFLOW_ADAPT_TO_LOAD=0 \
        "OMP_NUM_THREADS=${OMP_NUM_THREADS:-4}" timeout -k 10 "$left" \
        "$root/$v/bin/tapeflow_bench_cuda" --benchmark_filter="$filter" \
        --benchmark_repetitions=3 --benchmark_report_aggregates_only \
        --benchmark_format=csv 2>>"$out/ab.txt" </dev/null |
        grep -a '_median"' | sed "s/^/$v,$round,/" >>"$out/ab.csv" ||
        failed=1
    done
    order=("${order[1]}" "${order[0]}")
  done
  if [[ ! -s $out/ab.csv ]]; then
    echo "gpu_check ab: no timings (see the benchmark's lines above)" |
      tee -a "$out/ab.txt"
    return 1
  fi
  python3 - "$out/ab.csv" <<'EOF' | tee -a "$out/ab.txt"
import csv, statistics, sys
times = {}
for row in csv.reader(open(sys.argv[1])):
    version, name, real_time, unit = row[0], row[2], float(row[4]), row[6]
    times.setdefault((name.replace("_median", ""), unit), {}).setdefault(
        version, []).append(real_time)
print(f"{'case':<52} {'base':>10} {'new':>10} {'new/base':>9}  rounds")
for (name, unit), t in sorted(times.items()):
    if "base" in t and "new" in t:
        b, n = statistics.median(t["base"]), statistics.median(t["new"])
        print(f"{name:<52} {b:>8.3f}{unit:>2} {n:>8.3f}{unit:>2} {n / b:>9.3f}"
              f"  {min(len(t['base']), len(t['new']))}")
EOF
  ((failed == 0))
}
