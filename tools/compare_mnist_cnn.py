#!/usr/bin/env python3
"""Side-by-side run of the Fashion-MNIST CNN: tapeflow against libtorch.

Runs build/samples/mnist_cnn and its libtorch peer build/samples/mnist_cnn_torch
(samples/torch/mnist_cnn_torch.cpp: the same model, Adam 1e-3, batch 64,
PyTorch's default initializers) one after the other with the same thread count,
epochs and seed, and prints a Markdown table: test accuracy after every epoch,
training images/s, peak RSS and the tapeflow / libtorch ratio. Each program
measures its own images/s (training steps only, not the evaluation) and peak
RSS (getrusage); the script only parses their output.

The peer is built when libtorch-dev is installed (`scripts/install_deps.sh
--peers`, then `meson setup build` or `meson setup --reconfigure build`).
A full run (2 epochs each) takes several minutes: it is not part of the tests.

Usage:
  python3 tools/compare_mnist_cnn.py                       # 2 epochs, 2 threads
  python3 tools/compare_mnist_cnn.py --epochs 1 --train-limit 6400  # quick
  python3 tools/compare_mnist_cnn.py --repeat 3 --seed 1   # seeds 1, 2, 3
  python3 tools/compare_mnist_cnn.py --precision medium    # bfloat16 products
"""
import argparse
import os
import re
import statistics
import subprocess
import sys

EPOCH = re.compile(r"^epoch (\d+): .*test accuracy ([\d.]+)%", re.M)
FINAL = re.compile(
    r"^final: test accuracy ([\d.]+)%, ([\d.]+) images/s over ([\d.]+) s, "
    r"peak RSS ([\d.]+) MB", re.M)


def run(label, command, threads):
    """Runs one program; returns its per-epoch accuracies and final line."""
    # Debian's libtorch multiplies through OpenBLAS, whose own pthread pool
    # would oversubscribe the cores next to torch's OpenMP threads (as in
    # tools/bench_table.py, BLAS runs single-threaded inside them).
    env = dict(os.environ, OMP_NUM_THREADS=str(threads),
               OPENBLAS_NUM_THREADS="1")
    print(f"$ {' '.join(command)}", file=sys.stderr, flush=True)
    done = subprocess.run(command, env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True)
    final = FINAL.search(done.stdout)
    if done.returncode != 0 or not final:
        sys.exit(f"{label} failed (exit {done.returncode}):\n{done.stdout}")
    return {
        "epochs": [float(a) for _, a in EPOCH.findall(done.stdout)],
        "images_per_s": float(final.group(2)),
        "seconds": float(final.group(3)),
        "rss_mb": float(final.group(4)),
    }


def median_result(runs):
    """Medians over repeated runs, per epoch and per number."""
    return {
        "epochs": [statistics.median(r["epochs"][i] for r in runs)
                   for i in range(min(len(r["epochs"]) for r in runs))],
        **{k: statistics.median(r[k] for r in runs)
           for k in ("images_per_s", "seconds", "rss_mb")},
    }


def table(tf, torch, threads, precision, repeat, load):
    note = f", median of {repeat} runs" if repeat > 1 else ""
    # Other processes on the cores make images/s meaningless: say how busy
    # the machine was.
    lines = [f"Fashion-MNIST CNN, {threads} threads, {precision} "
             f"precision{note}; load average "
             f"{load[0]:.1f} before, {os.getloadavg()[0]:.1f} after", "",
             "| | tapeflow | libtorch | tapeflow / libtorch |",
             "|---|---:|---:|---:|"]
    for i, (a, b) in enumerate(zip(tf["epochs"], torch["epochs"])):
        lines.append(f"| test accuracy after epoch {i + 1} | {a:.2f}% | "
                     f"{b:.2f}% | {a - b:+.2f} points |")
    lines.append(f"| training images/s | {tf['images_per_s']:.0f} | "
                 f"{torch['images_per_s']:.0f} | "
                 f"{tf['images_per_s'] / torch['images_per_s']:.2f}x |")
    lines.append(f"| training time (s) | {tf['seconds']:.1f} | "
                 f"{torch['seconds']:.1f} | "
                 f"{tf['seconds'] / torch['seconds']:.2f}x |")
    lines.append(f"| peak RSS (MB) | {tf['rss_mb']:.0f} | "
                 f"{torch['rss_mb']:.0f} | "
                 f"{tf['rss_mb'] / torch['rss_mb']:.2f}x |")
    return "\n".join(lines)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--build-dir", default="build")
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--train-limit", type=int, default=0,
                   help="only the first n training images (quick checks)")
    p.add_argument("--seed", type=int, default=1,
                   help="seed of the first run (both programs)")
    p.add_argument("--repeat", type=int, default=1,
                   help="runs per program, seeds seed, seed+1, ...")
    p.add_argument("--torch-channels-last", action="store_true",
                   help="run the peer in channels-last memory format")
    p.add_argument("--precision", choices=("highest", "medium"),
                   default="highest",
                   help="medium: bfloat16 products (tapeflow's --precision "
                   "medium against the peer under CPU autocast to bfloat16)")
    a = p.parse_args()
    tf_bin = os.path.join(a.build_dir, "samples", "mnist_cnn")
    torch_bin = os.path.join(a.build_dir, "samples", "mnist_cnn_torch")
    for b in (tf_bin, torch_bin):
        if not os.access(b, os.X_OK):
            sys.exit(f"{b} not found: build it first (the peer needs "
                     "libtorch-dev: scripts/install_deps.sh --peers)")
    common = ["--epochs", str(a.epochs), "--threads", str(a.threads)]
    if a.train_limit > 0:
        common += ["--train-limit", str(a.train_limit)]
    load = os.getloadavg()
    tf_runs, torch_runs = [], []
    for k in range(a.repeat):
        seed = ["--seed", str(a.seed + k)]
        tf_runs.append(run("tapeflow", [tf_bin] + common + seed +
                           ["--precision", a.precision], a.threads))
        extra = ["--channels-last"] if a.torch_channels_last else []
        if a.precision == "medium":
            extra.append("--bf16-autocast")
        torch_runs.append(run("libtorch", [torch_bin] + common + seed + extra,
                              a.threads))
    print(table(median_result(tf_runs), median_result(torch_runs), a.threads,
                a.precision, a.repeat, load))


if __name__ == "__main__":
    main()
