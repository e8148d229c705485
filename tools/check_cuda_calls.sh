#!/usr/bin/env bash
# CUDA.md §3: every copy, memset, launch and wait in cuda/ goes on a
# device's stream. Legacy cudaMemcpy and cudaMemset run on the default
# stream, which does not order against our non-blocking streams, and
# cudaDeviceSynchronize waits for other libraries' work too. Rejects them in
# cuda/ outside cuda/context.*, the one place for device-wide calls; and a
# literal default stream anywhere in cuda/: a cudaStream_t set to 0, a
# cudaStreamSynchronize(0), a launch whose last argument is 0 (its stream,
# or its shared memory with the stream left out), cudaStreamLegacy.
# (Launches without a stream in libtapeflow_cuda are also nvcc's --Werror
# default-stream-launch.)
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
sources=(--include='*.cu' --include='*.cuh' --include='*.hpp' --include='*.cpp')
hits=$(grep -rnE 'cudaMemcpy\(|cudaMemset\(|cudaDeviceSynchronize' \
  "${sources[@]}" "$root/cuda" | grep -vE '^[^:]*/cuda/context\.(hpp|cu):')
zero='(0|nullptr|NULL)'
default_stream=$(grep -rnE \
  "cudaStream_t[^;=()]*=\\s*$zero\\s*[;,)]|cudaStream(Synchronize|Query)\\(\\s*$zero\\s*\\)|,\\s*$zero\\s*>>>|cudaStreamLegacy" \
  "${sources[@]}" "$root/cuda")
if [[ -n $hits ]]; then
  echo "check_cuda_calls: use cudaMemcpyAsync / cudaMemsetAsync on" \
    "activate(device)'s stream, and cudaStreamSynchronize of it:" >&2
  echo "$hits" >&2
fi
if [[ -n $default_stream ]]; then
  echo "check_cuda_calls: the default stream does not order with" \
    "activate(device)'s; use that stream:" >&2
  echo "$default_stream" >&2
fi
[[ -z $hits && -z $default_stream ]] || exit 1
echo "check_cuda_calls: $(find "$root/cuda" -type f | wc -l) files in cuda/ clean"
