#!/usr/bin/env bash
# Installs, builds and runs the whole test suite; ends with the line
# "N passed, N failed" (doctest test cases).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
meson test -C build --print-errorlogs || true
python3 tools/ci_summary.py build/meson-logs/testlog.json
