#!/usr/bin/env bash
# Installs, builds and runs the main sample.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
./build/samples/linear_regression "$@"
