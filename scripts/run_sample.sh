#!/usr/bin/env bash
# Installs dependencies, builds tapeflow and runs the main sample.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_deps.sh
if [[ ! -f build/build.ninja ]]; then
  meson setup build -Dbenchmarks=disabled
fi
ninja -C build
./build/samples/linear_regression "$@"
