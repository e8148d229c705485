#!/usr/bin/env bash
# The test suite under sanitizers, one command; ends with "N passed, N failed".
#  - build-asan/: libtapeflow and every test under ASan+UBSan (UBSan halts on
#    its first report), each fuzz corpus replayed through the instrumented
#    library (tests/fuzz/replay_main.cpp);
#  - build-tsan/: libtapeflow under ThreadSanitizer and the tests that run
#    threads: tpf::data's pipelines and queues (suite data), tapes used
#    across threads, and the parameter-server tests that need no MPI. OpenMP's
#    runtime is not instrumented, so kernels run on one thread there.
# Both build with g++, without CUDA, samples or benchmarks. Rerunning
# rebuilds what changed.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_deps.sh

common=(-Dbuildtype=debugoptimized -Db_lundef=false -Dcuda=disabled
        -Dsamples=false -Dbenchmarks=disabled -Dtorch_peer=disabled
        -Dfuzz=disabled)
[[ -f build-asan/build.ninja ]] ||
  meson setup build-asan "${common[@]}" -Db_sanitize=address,undefined
[[ -f build-tsan/build.ninja ]] ||
  meson setup build-tsan "${common[@]}" -Db_sanitize=thread -Dcpp_args=-DTPF_TSAN

ninja -C build-asan
# A tensor larger than memory must fail as it does unsanitized (aligned_alloc
# returns null), not as ASan's allocation-size-too-big report.
ASAN_OPTIONS=detect_leaks=1:strict_string_checks=1:allocator_may_return_null=1 \
UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
  meson test -C build-asan --no-rebuild --print-errorlogs \
  --timeout-multiplier 4 || true

threaded=(tests/test_data tests/test_data_threads tests/test_data_queues tests/test_data_files
          tests/test_tape_threads tests/dist/test_dist_parameter_server)
ninja -C build-tsan "${threaded[@]}"
TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 OMP_NUM_THREADS=1 \
  meson test -C build-tsan --no-rebuild --print-errorlogs \
  --timeout-multiplier 4 data data_threads data_queues data_files tape_threads \
  dist_parameter_server_plain || true

python3 tools/ci_summary.py build-asan/meson-logs/testlog.json \
  build-tsan/meson-logs/testlog.json
