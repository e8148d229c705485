#!/usr/bin/env bash
# Runs a program of the CUDA backend over a CUDA runtime whose device is host
# memory and whose kernels never run (tools/cuda_host_stub/), so that the
# backend's host path — op dispatch, the BFC arena, launch set-up, the tape —
# can be timed and profiled on a machine without a GPU:
#
#   tools/cuda_host_time.sh PROGRAM [ARGS...]
#   tools/cuda_host_time.sh build-gpu/benchmarks/cuda/tapeflow_bench_cuda \
#       --benchmark_filter='small_'
#
# What a GPU adds to each op (the driver's share of a launch, the kernel) is
# not in these numbers, and every value a kernel would compute is garbage:
# only times mean anything, and two checks. A launch that a GPU would refuse
# (cudart_host.cpp's launch_problem) fails with cudaErrorInvalidConfiguration
# and a line on stderr naming the kernel; with CUDA_HOST_STUB_KERNELS=FILE,
# every registered kernel is listed in FILE at exit as launched or not:
#
#   CUDA_HOST_STUB_KERNELS=/tmp/k TAPEFLOW_TEST_DEVICE=cuda \
#     TAPEFLOW_TEST_STRICT_DEVICE=1 tools/cuda_host_time.sh build/tests/test_norm
#
# The stubs are built into CUDA_HOST_STUB_DIR (default
# /tmp/tapeflow-cuda-host-stub) when older than their sources.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
stub_dir=${CUDA_HOST_STUB_DIR:-/tmp/tapeflow-cuda-host-stub}
# The toolkit's headers: CUDA_INCLUDE, else beside nvcc, else CUDA's default.
nvcc=$(command -v nvcc || true)
cuda_include=${CUDA_INCLUDE:-$([[ -n $nvcc ]] &&
  echo "$(dirname "$(dirname "$(readlink -f "$nvcc")")")/include" ||
  echo /usr/local/cuda/include)}
(($# > 0)) || { echo "usage: $0 PROGRAM [ARGS...]" >&2; exit 2; }

# stub SONAME [SOURCE]: a shared library of that name whose symbols carry the
# version node the real library's do (libcudart.so.13 and so on), as the
# backend was linked against them.
stub() {
  local soname=$1 source=${2:-} lib=$stub_dir/$1
  [[ -e $lib && ( -z $source || $lib -nt $source ) ]] && return 0
  printf '%s { global: *; };\n' "$soname" >"$stub_dir/$soname.map.$$"
  mv -f "$stub_dir/$soname.map.$$" "$stub_dir/$soname.map"
  local inputs=(-x c++ /dev/null)
  [[ -n $source ]] && inputs=("$source")
  # Built beside and renamed: a run starting meanwhile loads a whole library.
  g++ -std=c++20 -O2 -shared -fPIC -I"$cuda_include" "${inputs[@]}" \
    -Wl,-soname,"$soname" -Wl,--version-script="$stub_dir/$soname.map" \
    -o "$lib.$$" && mv -f "$lib.$$" "$lib"
}

mkdir -p "$stub_dir"
stub libcudart.so.13 "$here/cuda_host_stub/cudart_host.cpp"
stub libcublas.so.13 "$here/cuda_host_stub/cublas_host.cpp"
stub libcublasLt.so.13  # needed by the backend, none of its symbols used
LD_LIBRARY_PATH=$stub_dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} exec "$@"
