#!/usr/bin/env bash
# The lines of the CUDA backend that no GPU test suite runs, without a GPU:
# gcov over the CUDA emulator (tools/cuda_emu) while the cuda_emu test runs
# every GPU suite on it. Prints each file's lines
# run and, file by file, the lines never run (tools/cuda_emu/coverage.py).
#
#   meson setup build-cov -Demulator_coverage=true -Dbenchmarks=disabled
#   ninja -C build-cov && tools/cuda_emu_coverage.sh build-cov
set -euo pipefail
build=$(readlink -f "${1:?usage: $0 BUILD_DIR (configured with -Demulator_coverage=true)}")
cd "$(dirname "$0")/.."
objects=$build/tools/cuda_emu/libtapeflow_cuda.so.p
if [[ $(meson introspect "$build" --buildoptions |
  python3 -c 'import json, sys
print([o["value"] for o in json.load(sys.stdin) if o["name"] == "emulator_coverage"])') != "[True]" ]]; then
  echo "$build: configure it with -Demulator_coverage=true" >&2
  exit 2
fi
find "$objects" -name '*.gcda' -delete
meson test -C "$build" cuda_emu
reports=$(mktemp -d)
trap 'rm -rf "$reports"' EXIT
(cd "$reports" && gcov --json-format -o "$objects" "$objects"/*.gcda >/dev/null)
python3 tools/cuda_emu/coverage.py "$PWD" "$reports"/*.gcov.json.gz
