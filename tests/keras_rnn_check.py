#!/usr/bin/env python3
"""Keras-named recurrent weights from NumPy load into tapeflow's layers.

This script writes an .npz as a Keras model's weights exported to NumPy
would look (names "lstm/lstm_cell/kernel", ...; Keras' gate orders), plus
inputs and the outputs of a NumPy reference of Keras' LSTM and GRU
(reset_after) formulas; rnn_weights_helper loads the weights by name into
nn::LSTM / nn::GRU and compares their outputs with the reference.

Usage: keras_rnn_check.py RNN_WEIGHTS_HELPER. Exit 77 (meson's SKIP)
without NumPy."""
import os
import subprocess
import sys
import tempfile

from numpy_or_skip import numpy as np


def sigmoid(v):
    return 1.0 / (1.0 + np.exp(-v))


def lstm(x, kernel, recurrent, bias):
    """Keras LSTM, gate order i, f, c, o; every step's h."""
    units = recurrent.shape[0]
    h = np.zeros((x.shape[0], units))
    c = np.zeros((x.shape[0], units))
    out = []
    for t in range(x.shape[1]):
        z = x[:, t] @ kernel + h @ recurrent + bias
        i, f, g, o = np.split(z, 4, axis=1)
        c = sigmoid(f) * c + sigmoid(i) * np.tanh(g)
        h = sigmoid(o) * np.tanh(c)
        out.append(h)
    return np.stack(out, axis=1)


def gru(x, kernel, recurrent, bias):
    """Keras GRU with reset_after (bias rows: input, recurrent); z, r, h."""
    units = recurrent.shape[0]
    h = np.zeros((x.shape[0], units))
    out = []
    for t in range(x.shape[1]):
        xz, xr, xh = np.split(x[:, t] @ kernel + bias[0], 3, axis=1)
        rz, rr, rh = np.split(h @ recurrent + bias[1], 3, axis=1)
        z = sigmoid(xz + rz)
        r = sigmoid(xr + rr)
        hh = np.tanh(xh + r * rh)
        h = z * h + (1 - z) * hh
        out.append(h)
    return np.stack(out, axis=1)


rng = np.random.default_rng(5)
features, units = 3, 4
x = rng.uniform(-1, 1, (2, 6, features))
arrays = {"x": x}
lstm_w = [rng.uniform(-0.5, 0.5, s) for s in
          [(features, 4 * units), (units, 4 * units), (4 * units,)]]
gru_w = [rng.uniform(-0.5, 0.5, s) for s in
         [(features, 3 * units), (units, 3 * units), (2, 3 * units)]]
for prefix, weights in [("lstm/lstm_cell/", lstm_w), ("gru/gru_cell/", gru_w)]:
    for name, w in zip(["kernel", "recurrent_kernel", "bias"], weights):
        arrays[prefix + name] = w
arrays["expected_lstm"] = lstm(x, *lstm_w)
arrays["expected_gru"] = gru(x, *gru_w)

with tempfile.TemporaryDirectory() as tmp:
    path = os.path.join(tmp, "keras_rnn.npz")
    np.savez(path, **arrays)
    sys.exit(subprocess.run([sys.argv[1], path]).returncode)
