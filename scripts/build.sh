#!/usr/bin/env bash
# Installs the Debian packages tapeflow needs and builds it into build/.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_deps.sh
if [[ ! -f build/build.ninja ]]; then
  meson setup build -Dbenchmarks=disabled
fi
ninja -C build
