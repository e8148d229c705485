#!/usr/bin/env bash
# Every GPU check in one command (design: CUDA.md §6). GPU machines may lack
# our build dependencies and any network, so it has two steps:
#
#   tools/gpu_check.sh pack [BUILD_DIR]
#       here: builds BUILD_DIR (default build-gpu: sm_90, release, tests on;
#       an existing BUILD_DIR gets the same options through meson configure)
#       and bundles every libtapeflow*.so (the CUDA backend and LIBXSMM's
#       module are dlopened, so ldd cannot see them), the test and CUDA
#       bench binaries, mnist_cnn and their non-system libraries into
#       .gpu/bundle.tar.xz (git-ignored; xz: libdnnl alone is 40 MB), with
#       the whole Fashion-MNIST beside it in .gpu/fashion-mnist (.gpu refused
#       above 58 MiB, as a device call carries 64 MiB with the working tree).
#       Where MPI and NCCL are found, tpf::dist's NCCL test and Open MPI's
#       runtime join the bundle (tools/gpu_check_dist.sh).
#       CUDA's own libraries (libcudart, libcublas,
#       libcublasLt .so.13, libnccl) come from the GPU machine: run looks for them in
#       /usr/local/cuda/lib64, /usr/local/cuda/targets/x86_64-linux/lib and
#       pip's nvidia/*/lib.
#   tools/gpu_check.sh run
#       on the GPU machine, from the repository root. With the device tool:
#       run with command `bash tools/gpu_check.sh run`, carry [".gpu"] (the
#       bundle is git-ignored and travels only when carried) and a timeout_s
#       above the budget (480 for the default). Results go to $OUT (else
#       ./gpu-results), at most 7 files, so that all of them come back.
#
#       The whole run keeps to GPU_CHECK_BUDGET seconds (default 420,
#       counted from the start of run): each step's timeout is cut to what
#       is left, and a step with under 5 s left is skipped ("=== skipped
#       NAME (budget)"). summary.txt is rewritten after every step (and says
#       which step is running), so a run killed from outside still leaves a
#       valid one; its last line is "N passed, N failed" (doctest cases, one
#       per sanitizer run, two for mnist_cnn), the line before counts the
#       skipped steps. Steps, most informative first: preflight (nvidia-smi
#       -L, ldd of the bundle; a failure ends the run at once), test_cuda,
#       test_cuda_ops, every OpCase suite on the GPU in strict mode (an op
#       that soft-places fails; GPU_CHECK_JOBS of them at a time, default
#       6), a short mnist_cnn --device cuda:0 under the placement log (no op
#       may soft-place), mnist_cnn for its 2 epochs (passing at a test
#       accuracy of 89.5 %), compute-sanitizer memcheck on test_cuda_ops,
#       test_cuda and test_conv (strict, on the GPU; each tensor its own
#       cudaMalloc, TF_GPU_ALLOCATOR=cuda_malloc), racecheck on
#       test_cuda_ops, tpf::dist's NCCL test as an MPI singleton, the CUDA
#       benchmarks
#       where built, their PyTorch peers (tools/gpu_peer_cnn.py,
#       tools/gpu_peer_nn.py) where torch imports. Only the tests set the
#       exit status; a test that exits 77 (no GPU case ran: the CUDA
#       backend did not load) is reported loudly and fails it too.
#
#       GPU_CHECK_BUNDLE names another bundle (default .gpu/bundle.tar.xz,
#       relative to the repository root), e.g. a fake one to try this
#       script on a machine without a GPU.
#   tools/gpu_check.sh pack-ab BASE [BUILD_DIR]  /  ab [FILTER] [ROUNDS]
#       two versions' CUDA benchmarks alternated on one machine, for
#       changes smaller than the spread between machines (tools/gpu_check_ab.sh).
set -uo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=tools/gpu_check_dist.sh
source tools/gpu_check_dist.sh
# shellcheck source=tools/gpu_check_ab.sh
source tools/gpu_check_ab.sh

# The OpCase tables and the other suites that run ops on a device.
suites=(tensor elementwise reduce shape linalg activations pool norm conv conv_relu
        fractional_pool nn_generic layers optim precision nan hardening sort rounding scatter
        placement device_memory data_device dlpack profiler)

# pack's build options, for meson setup and, on an existing build, configure.
pack_options=(-Dgpu_archs=90 -Dbuildtype=release -Dcuda=enabled -Dtests=true
              -Dsamples=true -Ddist=auto -Dfuzz=disabled)

pack() {
  local build=${1:-build-gpu}
  set -e
  if [[ -f $build/build.ninja ]]; then
    meson configure "$build" "${pack_options[@]}"
  else
    meson setup "$build" "${pack_options[@]}"
  fi
  # Only what travels: the other tests and samples would double the build.
  local wanted=(src/libtapeflow.so src/libtapeflow_xsmm.so src/libtapeflow_cuda.so
                src/libtapeflow_dist.so src/libtapeflow_dist_nccl.so
                tests/test_cuda tests/test_cuda_ops tests/dist/test_dist_nccl
                samples/mnist_cnn benchmarks/cuda/tapeflow_bench_cuda)
  local targets=() t
  for s in "${suites[@]}"; do wanted+=("tests/test_$s"); done
  refresh_cuda_objects "$build" .
  # New options reach build.ninja at its regeneration, before the listing.
  ninja -C "$build" build.ninja >/dev/null
  local known
  known=$(ninja -C "$build" -t targets all | cut -d: -f1)
  for t in "${wanted[@]}"; do
    grep -qxF "$t" <<<"$known" && targets+=("$t")
  done
  ninja -C "$build" "${targets[@]}"
  local stage
  stage=$(mktemp -d)
  mkdir -p .gpu
  mkdir -p "$stage/bin" "$stage/lib"
  # Every library and runtime-loaded module (libtapeflow_cuda, _xsmm, ...);
  # tpf::dist's with its test (pack_dist).
  local so
  for so in "$build"/src/libtapeflow*.so; do
    [[ $so == */libtapeflow_dist* ]] || cp -L "$so" "$stage/lib/"
  done
  pack_dist "$build" "$stage" "${targets[@]}"
  [[ -e $stage/lib/libtapeflow_cuda.so ]] || {
    echo "gpu_check pack: no $build/src/libtapeflow_cuda.so" >&2
    return 1
  }
  cp "$build"/tests/test_cuda "$build"/tests/test_cuda_ops "$stage/bin/"
  for s in "${suites[@]}"; do cp "$build/tests/test_$s" "$stage/bin/"; done
  [[ -x $build/benchmarks/cuda/tapeflow_bench_cuda ]] &&
    cp "$build/benchmarks/cuda/tapeflow_bench_cuda" "$stage/bin/"
  pack_cnn_sample "$build" "$stage"
  # shellcheck disable=SC2046 # one word per component
  bundle_libraries "$stage" "$stage/lib" "$stage/lib" "$stage"/bin/* \
    "$stage"/lib/* "$stage"/dist/* $(find "$stage/openmpi" -name '*.so' 2>/dev/null)
  rm -f .gpu/bundle.tar.gz  # the gzip bundle of before
  tar -C "$stage" -cf - . | xz -6 -T0 >.gpu/bundle.tar.xz
  rm -rf "$stage"
  check_carry_size .gpu
}

# refresh_cuda_objects BUILD SOURCE: Meson 1.0 gives nvcc no dependency-file
# flags, so ninja never sees the headers a .cu file includes: when a header
# of the SOURCE tree is newer than BUILD's CUDA library, its objects are
# compiled again (named .._cuda_X.cu.o: a glob would skip them as hidden
# files).
refresh_cuda_objects() {
  local build=$1 source=$2
  local cuda_lib=$build/src/libtapeflow_cuda.so
  if [[ -e $cuda_lib && -n $(find "$source"/cuda "$source"/src "$source"/include \
        \( -name '*.h*' -o -name '*.cuh' \) -newer "$cuda_lib" -print -quit) ]]; then
    find "$build/src/libtapeflow_cuda.so.p" -name '*.cu.o' -delete
  fi
}

# bundle_libraries STAGE DEST SEARCH FILE...: copies into DEST the libraries
# the FILEs link outside glibc, the C++ runtime and CUDA, which the GPU
# machine may not have (oneDNN, BLAS/LAPACK, libzip, protobuf, OpenMP, ...),
# resolving names on SEARCH (a loader path) first; a library found inside
# STAGE is bundled already.
bundle_libraries() {
  local stage=$1 dest=$2 search=$3
  shift 3
  local skip='^(linux-vdso|ld-linux|libc|libm|libdl|librt|libpthread|libgcc_s|libstdc\+\+|libcuda|libcudart|libcublas|libcublasLt|libnvrtc|libnccl)\.'
  # Debian's reference BLAS and LAPACK where present: where OpenBLAS is the
  # alternative (the benchmark peers install it), libblas.so.3 would bring
  # its 36 MB into the bundle, and only CPU-side float64 tests use BLAS.
  local reference_blas=/usr/lib/x86_64-linux-gnu/blas:/usr/lib/x86_64-linux-gnu/lapack
  local f
  for f in "$@"; do
    [[ -e $f ]] || continue
    LD_LIBRARY_PATH="$search:$reference_blas" ldd "$f" | awk '$3 ~ /^\// {print $1, $3}'
  done | sort -u | while read -r name path; do
    [[ $name =~ $skip || $path == "$stage"/* || -e $dest/$name ]] ||
      cp -L "$path" "$dest/$name"
  done
}

# check_carry_size PATH...: a device call carries at most 64 MiB, the
# carried PATHs and the working tree together.
check_carry_size() {
  local size
  size=$(du -scb "$@" | tail -n 1 | cut -f1)
  echo "gpu_check pack: $* to carry, $((size / 1024 / 1024)) MiB"
  if ((size > 58 * 1024 * 1024)); then
    echo "gpu_check pack: over the 58 MiB budget" >&2
    return 1
  fi
}

# The CNN sample (linked with tpf::dist where MPI is found: its libraries
# travel too, and a plain process never starts MPI) into the bundle, and the
# whole Fashion-MNIST (30 MiB, gzipped already) beside it in
# .gpu/fashion-mnist, so that the run trains the sample's 2 epochs.
pack_cnn_sample() {
  local build=$1 stage=$2 fashion=/usr/share/datasets/fashion-mnist
  rm -rf .gpu/fashion-mnist
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
  mkdir -p .gpu/fashion-mnist
  cp "$fashion"/*-ubyte.gz .gpu/fashion-mnist/
}

# ---------------------------------------------------------------- run ----

out=${OUT:-./gpu-results}
# What comes back from $OUT: 8 files at most. These 7 and summary.txt's
# temporary file for an instant.
logs=(summary.txt cuda.txt opcase.txt train.txt sanitizer.txt bench.txt
      bench.json)
budget=${GPU_CHECK_BUDGET:-420}
kill_after=10  # timeout -k: a step that ignores SIGTERM is killed this later
t0=$SECONDS
passed=0
failed=0
skipped_budget=0
skipped_cuda=0
results=()   # one line per step, for summary.txt
status="starting"
rc=0         # the last step's exit status
log_start=0  # the lines its log file had before it
step_pid=    # its timeout process while it runs

# Rewrites $out/summary.txt in one move: valid whenever the run is killed.
write_summary() {
  {
    echo "gpu_check run: $status; $((SECONDS - t0))s of the ${budget}s budget"
    ((${#results[@]})) && printf '%s\n' "${results[@]}"
    # The training results and the PyTorch comparison, where they ran.
    (cd "$out" && grep -a -h -E '^(final:|ops placed:|[a-z0-9_]+: torch [0-9])' \
      train.txt bench.txt 2>/dev/null)
    echo "$((skipped_budget + skipped_cuda)) steps skipped: $skipped_budget" \
      "for the budget, $skipped_cuda with the CUDA backend not loaded (exit 77)"
    echo "$passed passed, $failed failed"
  } >"$out/summary.txt.tmp" && mv -f "$out/summary.txt.tmp" "$out/summary.txt"
}

# A line of summary.txt, also printed as the run goes.
result() {
  results+=("$1")
  echo "$1"
  write_summary
}

# step NAME LIMIT FILE COMMAND...: runs COMMAND under timeout, its limit cut
# to the budget left, stdin from /dev/null, output appended to $out/FILE;
# its exit status in $rc. Returns 1 without running it when under 5 s of the
# budget are left.
step() {
  local name=$1 limit=$2 file=$3
  shift 3
  # Whole seconds: one more for the fraction SECONDS does not count.
  local left=$((budget - (SECONDS - t0) - kill_after - 1))
  if ((left < 5)); then
    skipped_budget=$((skipped_budget + 1))
    result "=== skipped $name (budget)"
    return 1
  fi
  ((limit > left)) && limit=$left
  status="running $name (limit ${limit}s) since $((SECONDS - t0))s"
  write_summary
  echo "=== $name (limit ${limit}s)"
  touch "$out/$file"
  log_start=$(wc -l <"$out/$file")
  local start=$SECONDS command="$*"
  command=${command//$'\n'/ }
  echo "=== $name (limit ${limit}s): ${command:0:300}" >>"$out/$file"
  # In the background, so that a signal to this script is handled at once
  # (on_signal stops the step: timeout puts it in its own process group).
  timeout -k "$kill_after" "$limit" "$@" </dev/null >>"$out/$file" 2>&1 &
  step_pid=$!
  wait "$step_pid"
  rc=$?
  step_pid=
  echo "=== $name: exit $rc after $((SECONDS - start))s" >>"$out/$file"
  status="running"
  return 0
}

# Why the last step ended, for a summary line.
exit_words() {
  case $rc in
    0) echo "exit 0" ;;
    124 | 137) echo "TIMED OUT (exit $rc)" ;;
    *) echo "exit $rc" ;;
  esac
}

# counted NAME FILE: a pass or a failure from the last step's exit status
# (with compute-sanitizer's error count from its lines in $out/FILE).
counted() {
  local errors
  errors=$(tail -n +"$((log_start + 1))" "$out/$2" |
    grep -a -o -m 1 'ERROR SUMMARY: .*')
  if ((rc == 0)); then
    passed=$((passed + 1))
    result "=== $1: passed${errors:+ ($errors)}"
  elif ((rc == 77)); then
    skipped_cuda=$((skipped_cuda + 1))
    result "!!! $1: SKIPPED, exit 77: no GPU case ran, the CUDA backend was not loaded"
  else
    failed=$((failed + 1))
    result "=== $1: FAILED, $(exit_words)${errors:+ ($errors)}"
  fi
}

# count_doctest NAME FILE: counts the doctest summary the last step wrote to
# $out/FILE (only its own lines), and a failure where it exited non-zero
# with no failed case counted (a crash or timeout before its summary).
count_doctest() {
  local name=$1 file=$2 line p=0 f=0 s=0
  line=$(tail -n +"$((log_start + 1))" "$out/$file" |
    grep -a '\[doctest\] test cases:' | tail -n 1)
  [[ $line =~ ([0-9]+)\ passed ]] && p=${BASH_REMATCH[1]}
  [[ $line =~ ([0-9]+)\ failed ]] && f=${BASH_REMATCH[1]}
  [[ $line =~ ([0-9]+)\ skipped ]] && s=${BASH_REMATCH[1]}
  passed=$((passed + p))
  failed=$((failed + f))
  local counts="$p passed, $f failed, $s skipped"
  if ((rc == 77)); then
    skipped_cuda=$((skipped_cuda + 1))
    result "!!! $name: SKIPPED, exit 77: no GPU case ran, the CUDA backend was not loaded ($counts)"
  elif [[ -z $line ]]; then
    failed=$((failed + 1))
    result "=== $name: FAILED, $(exit_words) with no doctest summary (crashed or timed out)"
  elif ((rc != 0 && f == 0)); then
    failed=$((failed + 1))
    result "=== $name: FAILED, $(exit_words) with no failed case ($counts)"
  else
    result "=== $name: $(exit_words): $counts"
  fi
}

# unpack BUNDLE DIR: tar's xz, else Python's (a machine without xz-utils).
unpack() {
  tar -C "$2" -xJf "$1" 2>/dev/null ||
    python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' \
      "$1" "$2"
}

# The run's end: on a signal too (a kill from outside leaves the summary
# written before its step).
finish() {
  rm -rf "${root:-}"
  rm -f "$out/summary.txt.tmp"
}
on_signal() {
  [[ -n $step_pid ]] && kill -TERM "$step_pid" 2>/dev/null
  status="INTERRUPTED by SIG$1 (${status#running })"
  write_summary
  finish
  exit 143
}

run() {
  ulimit -c 0
  mkdir -p "$out"
  (cd "$out" && rm -f "${logs[@]}" summary.txt.tmp)
  trap 'on_signal TERM' TERM
  trap 'on_signal INT' INT
  trap 'on_signal HUP' HUP
  write_summary
  local bundle=${GPU_CHECK_BUNDLE:-.gpu/bundle.tar.xz}
  root=$(mktemp -d)
  if ! unpack "$bundle" "$root"; then
    status="no bundle $bundle (run pack here first; the device call needs carry [\".gpu\"])"
    failed=1
    write_summary
    cat "$out/summary.txt"
    finish
    return 1
  fi
  local bin=$root/bin

  # The loader path of the bundle's own binaries alone (not of nvidia-smi,
  # python3 and torch): the bundle first, then CUDA's libraries, which it
  # leaves to the machine.
  local libpath
  libpath=$(cuda_library_path "$root/lib")
  local benv=(env "LD_LIBRARY_PATH=$libpath" TAPEFLOW_ADAPT_TO_LOAD=0
              "OMP_NUM_THREADS=${OMP_NUM_THREADS:-4}")

  # Preflight: a GPU, and every library the bundle's binaries need. Fails
  # the run at once rather than spend the budget on tests that cannot load.
  # shellcheck disable=SC2016 # expanded by that bash
  step preflight 30 cuda.txt bash -c '
      root=$1; shift
      nvidia-smi -L || { echo "preflight: nvidia-smi -L failed"; exit 1; }
      timeout 10 nvidia-smi
      echo "loader path: $2"
      bad=0
      for f in "$root"/lib/libtapeflow*.so "$root"/bin/*; do
        [[ -e $f ]] || continue
        echo "--- ldd $f"
        found=$("$@" ldd "$f" 2>&1)
        ok=$?
        grep -E "not found|cuda|cublas|nccl|libmpi|not a dynamic" <<<"$found"
        if ((ok != 0)) || grep -q "not found" <<<"$found"; then
          case $f in
            */libtapeflow.so | */libtapeflow_cuda.so | */test_cuda)
              echo "preflight: FATAL, $f cannot load"; bad=1 ;;
            *) echo "preflight: WARNING, $f cannot load" ;;
          esac
        fi
      done
      [[ -e $root/lib/libtapeflow_cuda.so ]] ||
        { echo "preflight: no lib/libtapeflow_cuda.so in the bundle"; bad=1; }
      if command -v cuobjdump >/dev/null; then
        timeout 5 cuobjdump --list-elf "$root/lib/libtapeflow_cuda.so"
      fi
      exit $bad' _ "$root" "${benv[@]}" || rc=-1
  if ((rc == -1)); then
    status="budget of ${budget}s too small for anything"
    write_summary
    cat "$out/summary.txt"
    finish
    return 1
  fi
  local gpus  # nvidia-smi -L
  gpus=$(tail -n +"$((log_start + 1))" "$out/cuda.txt" | grep -a '^GPU [0-9]')
  [[ -n $gpus ]] && results+=("$gpus")
  if ((rc != 0)); then
    failed=$((failed + 1))
    status="PREFLIGHT FAILED, $(exit_words) (see cuda.txt); nothing else ran"
    result "=== preflight: FAILED, $(exit_words): $(tail -n +"$((log_start + 1))" \
      "$out/cuda.txt" | grep -a -m 3 -E '^preflight:|=> not found' | tr '\n' ' ')"
    cat "$out/summary.txt"
    finish
    return 1
  fi
  result "=== preflight: ok"

  local test
  for test in test_cuda test_cuda_ops; do
    step "$test" 90 cuda.txt "${benv[@]}" "$bin/$test" &&
      count_doctest "$test" cuda.txt
  done

  parallel_suites 90 "$root/suites" "${benv[@]}" TAPEFLOW_TEST_DEVICE=cuda \
    TAPEFLOW_TEST_STRICT_DEVICE=1

  run_dist "$root" "${benv[@]}"

  local cnn=$bin/mnist_cnn data=$PWD/.gpu/fashion-mnist
  local have_cnn=0
  if [[ -x $cnn && -d $data ]]; then
    have_cnn=1
    cnn_placement "$cnn" "$data" "$root/placement.log" "${benv[@]}"
  else
    result "=== mnist_cnn: not in the bundle"
  fi

  if ((have_cnn)); then
    # The sample's 2 epochs on the whole training set: they pass at a test
    # accuracy of 89.5 % (the CPU's seeds 1-3 reached 89.2-90.4 %).
    # shellcheck disable=SC2016 # expanded by that bash
    step "mnist_cnn train" 120 train.txt bash -c '
        set -o pipefail
        "$@" | awk "{ print }
          /^final:/ && match(\$0, /[0-9.]+%/) { acc = substr(\$0, RSTART, RLENGTH - 1) }
          END { exit !(acc + 0 >= 89.5) }"' _ "${benv[@]}" "$cnn" \
      --device cuda:0 --data-dir "$data" --epochs 2 --seed 1 &&
      counted "mnist_cnn train (2 epochs, test accuracy >= 89.5 %)" train.txt
  fi

  # compute-sanitizer: the bundle's path goes to it too, since its target
  # (the test itself, the root process it tracks) inherits its environment;
  # an `env` between them would be the tracked process instead.
  local sanitizer
  sanitizer=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
  local sanitize=("${benv[@]}" "$sanitizer" --target-processes application-only
                  --error-exitcode 1)
  # memcheck sees each tensor's end where each tensor is its own cudaMalloc:
  # in the BFC arena, an access past it lands in a neighbouring chunk.
  local memcheck=("${benv[@]}" TF_GPU_ALLOCATOR=cuda_malloc
                  "${sanitize[@]:${#benv[@]}}" --tool memcheck)
  if [[ -x $sanitizer ]]; then
    for test in test_cuda_ops test_cuda; do
      step "memcheck $test" 120 sanitizer.txt "${memcheck[@]}" "$bin/$test" &&
        counted "memcheck $test" sanitizer.txt
    done
    # The convolutions' kernels (every path of choose_conv_algo) through
    # test_conv's OpCase tables on the GPU.
    step "memcheck test_conv" 150 sanitizer.txt "${benv[@]}" \
      TAPEFLOW_TEST_DEVICE=cuda TAPEFLOW_TEST_STRICT_DEVICE=1 \
      "${memcheck[@]:${#benv[@]}}" "$bin/test_conv" &&
      counted "memcheck test_conv" sanitizer.txt
  else
    result "=== compute-sanitizer: not found"
  fi

  if [[ -x $sanitizer ]]; then
    step "racecheck test_cuda_ops" 150 sanitizer.txt "${sanitize[@]}" \
      --tool racecheck "$bin/test_cuda_ops" && counted "racecheck test_cuda_ops" sanitizer.txt
  fi

  # Timings, not tests: they set no pass or failure.
  if [[ -x $bin/tapeflow_bench_cuda ]]; then
    step bench 120 bench.txt "${benv[@]}" "$bin/tapeflow_bench_cuda" \
      --benchmark_out="$out/bench.json" --benchmark_out_format=json &&
      result "=== bench: $(exit_words)"
    if ! step "torch import" 60 bench.txt python3 -c "import torch"; then
      skipped_budget=$((skipped_budget + 1))
      result "=== skipped torch peer (budget)"
    elif ((rc == 0)); then
      step "torch peer" 90 bench.txt python3 tools/gpu_peer_cnn.py \
        --tapeflow-json "$out/bench.json" &&
        result "=== torch peer: $(exit_words)"
      step "torch nn peer" 90 bench.txt python3 tools/gpu_peer_nn.py \
        --tapeflow-json "$out/bench.json" &&
        result "=== torch nn peer: $(exit_words)"
    else
      result "=== torch peer: torch does not import ($(exit_words))"
    fi
  else
    result "=== bench: not in the bundle"
  fi

  status="complete"
  write_summary
  finish
  cat "$out/summary.txt"
  ((failed == 0 && passed > 0 && skipped_cuda == 0))
}

# cuda_library_path DIRS: DIRS (a loader path), the caller's
# LD_LIBRARY_PATH, then the machine's CUDA libraries (toolkit and pip's
# nvidia packages).
cuda_library_path() {
  local libpath=$1${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} d lib nvidia
  for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib \
           /usr/local/cuda/lib; do
    [[ -d $d ]] && libpath+=:$d
  done
  nvidia=$(timeout -k 5 20 python3 -c \
    'import nvidia; print("\n".join(nvidia.__path__))' 2>/dev/null) || nvidia=
  while read -r d; do
    [[ -n $d ]] || continue
    for lib in "$d"/*/lib; do [[ -d $lib ]] && libpath+=:$lib; done
  done <<<"$nvidia"
  echo "$libpath"
}

# parallel_suites LIMIT DIR ENV...: every OpCase suite on the GPU, up to
# GPU_CHECK_JOBS (default 6) at a time: one GPU runs several test processes
# side by side, and one at a time would spend most of the budget on the
# host side of the tests. Each suite's output goes to DIR/NAME.txt, then to
# opcase.txt in the suites' order; each is counted as step would count it.
parallel_suites() {
  local limit=$1 dir=$2 jobs=${GPU_CHECK_JOBS:-6} s
  shift 2
  local left=$((budget - (SECONDS - t0) - kill_after - 1))
  if ((left < 5)); then
    skipped_budget=$((skipped_budget + ${#suites[@]}))
    result "=== skipped the OpCase suites (budget)"
    return
  fi
  ((limit > left)) && limit=$left
  mkdir -p "$dir"
  touch "$out/opcase.txt"
  status="running the OpCase suites, $jobs at a time (limit ${limit}s each) since $((SECONDS - t0))s"
  write_summary
  echo "=== OpCase suites, $jobs at a time (limit ${limit}s each)"
  for s in "${suites[@]}"; do
    while (($(jobs -rp | wc -l) >= jobs)); do wait -n; done
    (
      timeout -k "$kill_after" "$limit" "$@" "$bin/test_$s" </dev/null \
        >"$dir/$s.txt" 2>&1
      echo $? >"$dir/$s.rc"
    ) &
  done
  wait
  for s in "${suites[@]}"; do
    log_start=$(wc -l <"$out/opcase.txt" 2>/dev/null || echo 0)
    rc=$(cat "$dir/$s.rc" 2>/dev/null || echo 1)
    {
      echo "=== $s (limit ${limit}s, parallel)"
      cat "$dir/$s.txt"
      echo "=== $s: exit $rc"
    } >>"$out/opcase.txt"
    count_doctest "$s" opcase.txt
  done
  status="running"
}

# cnn_placement CNN DATA LOG ENV...: mnist_cnn --device cuda:0 for 128
# images under the placement log; passes when no op soft-places onto the CPU.
cnn_placement() {
  local cnn=$1 data=$2 log=$3
  shift 3
  # shellcheck disable=SC2016 # expanded by that bash
  step "mnist_cnn placement" 60 train.txt bash -c '
      cnn=$1 data=$2 log=$3; shift 3
      TAPEFLOW_LOG_PLACEMENT=1 "$@" "$cnn" --device cuda:0 --data-dir "$data" \
        --epochs 1 --train-limit 128 --seed 1 >/dev/null 2>"$log"
      status=$?
      grep -av " -> " "$log"  # whatever else it wrote there: errors
      echo "ops placed: $(grep -ac " -> " "$log"), soft-placed onto the CPU:" \
        "$(grep -ac "soft placement" "$log")"
      grep -a "soft placement" "$log"
      ((status == 0)) && ! grep -aq "soft placement" "$log"' \
    _ "$cnn" "$data" "$log" "$@" && counted "mnist_cnn placement" train.txt
}

case "${1:-}" in
  pack) shift; pack "$@" ;;
  run) run ;;
  pack-ab) shift; pack_ab "$@" ;;
  ab) shift; run_ab "$@" ;;
  *) sed -n '2,54p' "$0"; exit 2 ;;
esac
