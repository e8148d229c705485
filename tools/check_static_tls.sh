#!/usr/bin/env bash
# libtapeflow keeps its tape state in initial-exec thread-locals (fast to
# reach), so the dynamic linker places the library's whole TLS block in the
# static TLS area. A host that dlopens libtapeflow (Python through ctypes, a
# plugin loader) gets only glibc's surplus for that: ~1.6 KiB, shared with
# every other such library it loads (libgomp among them). This check keeps
# the block under a budget, so that a new thread_local shows up here and not
# as "cannot allocate memory in static TLS block" in a user's Python process.
# The modules libtapeflow loads itself (LIBXSMM's, ~0.8 KiB of thread-locals)
# must use dynamic TLS instead: --dynamic checks that a library does not ask
# for the static area at all.
#   check_static_tls.sh LIBRARY [BUDGET_BYTES]
#   check_static_tls.sh --dynamic LIBRARY
set -euo pipefail
if [[ $1 == --dynamic ]]; then
  lib=$2
  if readelf -dW "$lib" | grep -q 'STATIC_TLS'; then
    echo "check_static_tls: $lib asks for static TLS (an initial-exec" \
      "thread-local), expected none: it is dlopened" >&2
    exit 1
  fi
  echo "check_static_tls: $lib: dynamic TLS only"
  exit 0
fi
lib=$1
budget=${2:-1024}
size_hex=$(readelf -lW "$lib" | awk '$1 == "TLS" {print $6}')
size=$((${size_hex:-0}))
if ((size > budget)); then
  echo "check_static_tls: $lib has $size bytes of thread-local storage," \
    "expected at most $budget (see tools/check_static_tls.sh)" >&2
  exit 1
fi
echo "check_static_tls: $lib: $size of $budget bytes"
