#!/usr/bin/env python3
"""PyTorch peer of tapeflow_bench_cuda's train_step_cnn (CUDA.md section 7).

The Fashion-MNIST CNN of samples/common/models.hpp (conv5x5x32 SAME - relu -
maxpool2 - conv5x5x64 SAME - relu - maxpool2 - dense 1024 - relu - dropout
0.5 - dense 10), Adam 1e-3 (epsilon 1e-7, Keras' and tapeflow's), one step
per iteration on a fixed random batch on cuda:0, each step ended by a
synchronization as in the tapeflow case. TF32 is off for matmuls and cuDNN
convolutions: tapeflow's default precision ("highest") multiplies in float32.

Prints images/s per batch size. With --tapeflow-json (the benchmark JSON of
tapeflow_bench_cuda) it also prints, per batch size, tapeflow's images/s,
PyTorch's and their ratio. Exits 0 with a message where torch or a CUDA
device is missing, so that tools/gpu_check.sh can call it anywhere.
"""
import argparse
import json
import sys
import time

BATCHES = (64, 512)


def peer_model(torch):
    nn = torch.nn
    return nn.Sequential(
        nn.Conv2d(1, 32, 5, padding="same"), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 5, padding="same"), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(64 * 7 * 7, 1024), nn.ReLU(),
        nn.Dropout(0.5), nn.Linear(1024, 10))


def images_per_second(torch, batch, warmup, seconds, repeats):
    """The best of `repeats` timings of about `seconds` each, after warm-up."""
    device = torch.device("cuda:0")
    torch.manual_seed(7)
    model = peer_model(torch).to(device).train()
    adam = torch.optim.Adam(model.parameters(), lr=1e-3, eps=1e-7)
    x = torch.rand(batch, 1, 28, 28, device=device)
    y = torch.randint(0, 10, (batch,), device=device)
    loss_fn = torch.nn.CrossEntropyLoss()

    def step():
        adam.zero_grad(set_to_none=True)
        loss_fn(model(x), y).backward()
        adam.step()
        torch.cuda.synchronize(device)

    for _ in range(warmup):
        step()
    best = 0.0
    for _ in range(repeats):
        steps, start = 0, time.perf_counter()
        while True:
            step()
            steps += 1
            elapsed = time.perf_counter() - start
            if elapsed >= seconds:
                break
        best = max(best, steps * batch / elapsed)
    return best


def tapeflow_rates(path):
    """images/s of train_step_cnn_<batch>/tapeflow in a benchmark JSON."""
    try:
        with open(path) as f:
            runs = json.load(f).get("benchmarks", [])
    except (OSError, ValueError) as e:
        # The benchmark crashed or timed out: the peer's numbers still count.
        print(f"gpu_peer_cnn: no tapeflow results ({e})")
        return {}
    rates = {}
    for run in runs:
        name = run.get("name", "")
        if (name.startswith("train_step_cnn_") and
                name.split("/")[1:2] == ["tapeflow"] and "images" in run):
            batch = int(name.split("/")[0].rsplit("_", 1)[1])
            rates[batch] = max(rates.get(batch, 0.0), float(run["images"]))
    return rates


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tapeflow-json",
                        help="tapeflow_bench_cuda's --benchmark_out file")
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=1.0,
                        help="length of one timing")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    try:
        import torch
    except ImportError as e:
        print(f"gpu_peer_cnn: PyTorch is not importable ({e}); nothing to run")
        return 0
    if not torch.cuda.is_available():
        print(f"gpu_peer_cnn: torch {torch.__version__} sees no CUDA device; "
              "nothing to run")
        return 0
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    print(f"gpu_peer_cnn: torch {torch.__version__}, CUDA {torch.version.cuda}, "
          f"cuDNN {torch.backends.cudnn.version()}, "
          f"{torch.cuda.get_device_name(0)}, TF32 off")
    ours = tapeflow_rates(args.tapeflow_json) if args.tapeflow_json else {}
    for batch in BATCHES:
        theirs = images_per_second(torch, batch, args.warmup, args.seconds,
                                   args.repeats)
        line = f"train_step_cnn_{batch}: torch {theirs:.0f} images/s"
        if batch in ours:
            line += (f", tapeflow {ours[batch]:.0f} images/s, "
                     f"tapeflow/torch {ours[batch] / theirs:.2f}x")
        elif args.tapeflow_json:
            line += ", tapeflow: no result in " + args.tapeflow_json
        print(line, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
