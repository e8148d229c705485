# shellcheck shell=bash
# tpf::dist's NCCL test for tools/gpu_check.sh (sourced by it). The GPU
# machines have no MPI, so pack bundles Debian's Open MPI runtime with the
# test: its libraries, the components it loads (below openmpi/, the Debian
# layout that OPAL_PREFIX relocates) and its help texts. The test runs as an
# isolated MPI singleton (a world of one rank, no mpirun and no orted), which
# still drives NCCL's start-up (the unique id broadcast over MPI), every
# collective's NCCL path and the fold kernels at N = 1.

# Components that need a network fabric the singleton never uses (UCX,
# libfabric, PSM, verbs) or OpenSHMEM: left behind, with their libraries.
dist_unused_components='(ucx|ofi|psm|openib|uct|spml|sshmem|scoll|memheap|atomic_)'

# pack_dist BUILD STAGE TARGET...: the test and the Open MPI runtime into
# STAGE, where this pack built tpf::dist's NCCL half and its test (TARGETs:
# what it built; files left by an older configuration do not count) and
# Open MPI is what MPI was found as; pack's library walk adds what they link.
pack_dist() {
  local build=$1 stage=$2
  shift 2
  local built=" $* "
  if [[ $built != *" src/libtapeflow_dist_nccl.so "* ||
        $built != *" tests/dist/test_dist_nccl "* ]]; then
    echo "gpu_check pack: no tpf::dist with NCCL in $build (MPI or NCCL not" \
      "found), its test not bundled"
    return 0
  fi
  if ! command -v ompi_info >/dev/null; then
    echo "gpu_check pack: MPI is not Open MPI (no ompi_info), the NCCL test" \
      "not bundled"
    return 0
  fi
  mkdir -p "$stage/dist"
  cp -L "$build"/src/libtapeflow_dist.so "$build"/src/libtapeflow_dist_nccl.so \
    "$stage/lib/"
  cp "$build/tests/dist/test_dist_nccl" "$stage/dist/"
  local pkglib pkgdata
  pkglib=$(ompi_info --path pkglibdir --parsable | cut -d: -f3-)
  pkgdata=$(ompi_info --path pkgdatadir --parsable | cut -d: -f3-)
  local prefix
  prefix=$(ompi_info --path prefix --parsable | cut -d: -f3-)
  local components=$stage/openmpi/${pkglib#"$prefix"/}
  mkdir -p "$components" "$stage/openmpi/${pkgdata#"$prefix"/}"
  local c
  for c in "$pkglib"/*.so; do
    [[ $(basename "$c") =~ $dist_unused_components ]] || cp "$c" "$components/"
  done
  cp "$pkgdata"/*.txt "$stage/openmpi/${pkgdata#"$prefix"/}/"
}

# run_dist ROOT ENV...: the bundled NCCL test, where the bundle has it.
run_dist() {
  local root=$1
  shift
  [[ -x $root/dist/test_dist_nccl ]] || {
    result "=== dist_nccl: not in the bundle"
    return
  }
  step "dist_nccl (MPI singleton)" 60 cuda.txt "$@" \
    OPAL_PREFIX="$root/openmpi" TAPEFLOW_DIST_MPI=1 \
    OMPI_MCA_ess_singleton_isolated=1 OMPI_ALLOW_RUN_AS_ROOT=1 \
    OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl=self,vader \
    OMPI_MCA_btl_vader_single_copy_mechanism=none \
    "$root/dist/test_dist_nccl" && count_doctest "dist_nccl" cuda.txt
}
