#!/usr/bin/env bash
# The Python peers of the CPU benchmarks (tools/cpu_python_peers.py): PyTorch
# 2.x, TensorFlow 2.x (tensorflow-cpu) and JAX from PyPI in a virtual
# environment of their own, $TAPEFLOW_PEERS_DIR/py (default
# /opt/tapeflow-peers/py). For the closing notes only: nothing in the build,
# the tests or CI uses it. PyPI's torch wheel brings CUDA's libraries along
# (~7 GB in all); the CPU peers never load a GPU. Idempotent.
#   scripts/fetch_python_peers.sh
set -euo pipefail
dest=${TAPEFLOW_PEERS_DIR:-/opt/tapeflow-peers}/py
if [[ ! -x "$dest/bin/python" ]]; then
  sudo=""
  [[ $(id -u) -ne 0 ]] && sudo="sudo"
  $sudo mkdir -p "$(dirname "$dest")"
  $sudo python3 -m venv "$dest"
  $sudo chown -R "$(id -u):$(id -g)" "$dest"  # pip below runs as the caller
fi
"$dest/bin/python" -m pip install --quiet torch tensorflow-cpu "jax[cpu]"
"$dest/bin/python" - <<'PY'
import importlib
for name in ("torch", "tensorflow", "jax"):
    print(f"python peer: {name} {importlib.import_module(name).__version__}")
PY
echo "run: $dest/bin/python tools/cpu_python_peers.py --help"
