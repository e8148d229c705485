#!/usr/bin/env bash
# CUDA.md §3: every copy, memset and wait in the CUDA backend goes on a
# device's stream. Legacy cudaMemcpy and cudaMemset run on the default
# stream, which does not order against our non-blocking streams, and
# cudaDeviceSynchronize waits for other libraries' work too. Rejects them in
# cuda/ outside cuda/context.*, the one place for device-wide calls.
# (Kernel launches without a stream are nvcc's --Werror default-stream-launch.)
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
hits=$(grep -rnE 'cudaMemcpy\(|cudaMemset\(|cudaDeviceSynchronize' \
  --include='*.cu' --include='*.cuh' --include='*.hpp' --include='*.cpp' \
  "$root/cuda" | grep -vE '^[^:]*/cuda/context\.(hpp|cu):')
if [[ -n $hits ]]; then
  echo "check_cuda_calls: use cudaMemcpyAsync / cudaMemsetAsync on" \
    "activate(device)'s stream, and cudaStreamSynchronize of it:" >&2
  echo "$hits" >&2
  exit 1
fi
echo "check_cuda_calls: $(find "$root/cuda" -type f | wc -l) files in cuda/ clean"
