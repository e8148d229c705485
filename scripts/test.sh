#!/usr/bin/env bash
# Installs dependencies, builds tapeflow and runs the whole test suite; ends
# with the line "N passed, N failed" (doctest test cases).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_deps.sh
if [[ ! -f build/build.ninja ]]; then
  meson setup build -Dbenchmarks=disabled
fi
ninja -C build
meson test -C build --print-errorlogs || true
python3 tools/ci_summary.py build/meson-logs/testlog.json
