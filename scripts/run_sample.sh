#!/usr/bin/env bash
# Installs, builds and runs the main sample: the Fashion-MNIST CNN (2 epochs;
# pass flags through, e.g. --epochs 1 --threads 2; --help lists them).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
./build/samples/mnist_cnn "$@"
