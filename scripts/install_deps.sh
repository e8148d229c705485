#!/usr/bin/env bash
# Installs every Debian 12 package tapeflow needs to build, test and benchmark.
# Idempotent: packages already present are left as they are.
#   scripts/install_deps.sh           build + tests + samples
#   scripts/install_deps.sh --peers   also the benchmark peers: OpenBLAS, Debian's
#                                     libtorch 1.13 and PyTorch 2.x's C++ libraries
#                                     from PyPI (scripts/fetch_torch_peer.sh)
#   scripts/install_deps.sh --python-peers  also PyTorch, TensorFlow and JAX in
#                                     a virtual environment for
#                                     tools/cpu_python_peers.py
#                                     (scripts/fetch_python_peers.sh; ~7 GB)
set -euo pipefail

packages=(
  g++ meson ninja-build pkg-config cmake python3
  xtl-dev libxsimd-dev libxtensor-dev libxtensor-blas-dev
  libdnnl-dev liblapack-dev libblas-dev
  libxsmm-dev                  # small matrix products (src/cpu/libxsmm)
  doctest-dev libbenchmark-dev libcli11-dev
  libzip-dev zlib1g-dev        # tpf::io: .npz archives, gzipped IDX files
  libpng-dev                   # tpf::summary: image summaries as PNG
  libre2-dev                   # tpf::strings::regex_full_match (TensorFlow's RE2)
  libprotobuf-dev protobuf-compiler  # tpf::io: tf.train.Example records
  libopenmpi-dev openmpi-bin   # tpf::dist: launch, CPU collectives (mpirun)
  nlohmann-json3-dev           # tpf::dist: ClusterSpec files
  libdlpack-dev                # tpf::to_dlpack / from_dlpack (DLPack 0.6)
  python3-numpy                # tests/npz_numpy_check.py (skips without it)
  doxygen                      # docs/Doxyfile: the API reference (meson test docs_api)
  python3-venv                 # tests/tensorboard_check.py: TensorBoard from PyPI
  dataset-fashion-mnist        # /usr/share/datasets/fashion-mnist for the samples
)
if [[ "${1:-}" == "--peers" ]]; then
  # Debian's libtorch multiplies through libblas.so.3: without OpenBLAS that is
  # the netlib reference BLAS, and the peer would look ~20x slower than it is.
  # PyTorch 2.x's C++ libraries come from its PyPI wheel (fetch_torch_peer.sh,
  # through pip download): Debian's 1.13 stays as the fallback peer.
  packages+=(libtorch-dev libopenblas0-pthread python3-pip)
fi
if [[ "${1:-}" == "--python-peers" ]]; then
  packages+=(python3-venv util-linux)  # util-linux: taskset, for 1-thread runs
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" \
    || missing+=("$p")
done
if ((${#missing[@]})); then
  sudo=""
  [[ $(id -u) -ne 0 ]] && sudo="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y --no-install-recommends "${missing[@]}"
fi
if [[ "${1:-}" == "--peers" ]]; then
  bash "$(dirname "$0")/fetch_torch_peer.sh"
fi
if [[ "${1:-}" == "--python-peers" ]]; then
  bash "$(dirname "$0")/fetch_python_peers.sh"
fi
