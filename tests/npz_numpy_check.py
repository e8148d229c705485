#!/usr/bin/env python3
"""NumPy interoperability of tpf::io: np.load reads what tapeflow wrote, and
tapeflow's load_npz reads what np.savez / np.savez_compressed wrote.

Usage: npz_numpy_check.py IO_HELPER. Exit 77 (meson's SKIP) without NumPy."""
import math
import os
import subprocess
import sys
import tempfile

from numpy_or_skip import numpy as np

helper = sys.argv[1]
failures = []


def expect(arrays, name, dtype, values):
    want = np.array(values, dtype=dtype)
    got = arrays[name]
    if got.dtype != want.dtype or got.shape != want.shape or \
            got.tobytes() != want.tobytes():
        failures.append(f"{name}: expected {want.dtype} {want.shape} {want!r},"
                        f" got {got.dtype} {got.shape} {got!r}")


with tempfile.TemporaryDirectory() as tmp:
    # tapeflow -> NumPy
    path = os.path.join(tmp, "tapeflow.npz")
    subprocess.run([helper, "write", path], check=True)
    with np.load(path, allow_pickle=False) as z:
        names = list(z.keys())
        if names != ["f32", "f64", "i32", "i64", "b", "zero_d", "cube",
                     "transposed", "nested/name"]:
            failures.append(f"names in order: got {names}")
        f32 = [[0.5, -1.25, 3e-8], [1e30, -0.0, 7.0]]
        expect(z, "f32", np.float32, f32)
        expect(z, "f64", np.float64, [math.pi, -math.e, 1e-300])
        expect(z, "i32", np.int32, [-2**31, 0, 2**31 - 1])
        expect(z, "i64", np.int64, [-2**63, 1, 9007199254740993])
        expect(z, "b", np.bool_, [True, False, True])
        expect(z, "zero_d", np.float64, 2.5)
        expect(z, "cube", np.int64, np.arange(24).reshape(2, 3, 4))
        expect(z, "transposed", np.float32, np.array(f32, np.float32).T)
        expect(z, "nested/name", np.float32, np.zeros((0, 3)))

    # NumPy -> tapeflow (the helper checks these exact values and order)
    arrays = dict(
        f32=np.array([[1.5, -2], [3, 4e-7]], np.float32),
        f64=np.array([math.pi, -1e300]),
        i32=np.array([-2**31, 2**31 - 1], np.int32),
        i64=np.array([-2**63, 2**63 - 1], np.int64),
        b=np.array([True, False, True]),
        zero_d=np.array(-3.25),
        cube=np.arange(-12, 12, dtype=np.int64).reshape(2, 3, 4))
    for save in (np.savez, np.savez_compressed):
        path = os.path.join(tmp, save.__name__ + ".npz")
        save(path, **arrays)
        r = subprocess.run([helper, "check", path], capture_output=True,
                           text=True)
        if r.returncode != 0:
            failures.append(f"{save.__name__}: {r.stdout}{r.stderr}")

for f in failures:
    print("FAIL", f)
print("numpy", np.__version__, ":", "ok" if not failures else "failed")
sys.exit(1 if failures else 0)
