#!/usr/bin/env python3
"""PyTorch peer of tapeflow_bench_cuda's train_step_cnn (CUDA.md section 7).

The Fashion-MNIST CNN of samples/common/models.hpp (conv5x5x32 SAME - relu -
maxpool2 - conv5x5x64 SAME - relu - maxpool2 - dense 1024 - relu - dropout
0.5 - dense 10), Adam 1e-3 (epsilon 1e-7, Keras' and tapeflow's), one step
per iteration on a fixed random batch on cuda:0, each step ended by a
synchronization as in the tapeflow case. TF32 is off for matmuls and cuDNN
convolutions: tapeflow's default precision ("highest") multiplies in float32.

Prints images/s per batch size (with --profile, also torch.profiler's
per-kernel table of ten steps). With --tapeflow-json (the benchmark JSON of
tapeflow_bench_cuda) it also prints, per batch size, tapeflow's images/s,
PyTorch's and their ratio. Exits 0 with a message where torch or a CUDA
device is missing, so that tools/gpu_check.sh can call it anywhere.
"""
import argparse
import sys

import gpu_peer_common as common

TOOL = "gpu_peer_cnn"

BATCHES = (64, 512)


def peer_model(torch):
    nn = torch.nn
    return nn.Sequential(
        nn.Conv2d(1, 32, 5, padding="same"), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 5, padding="same"), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(64 * 7 * 7, 1024), nn.ReLU(),
        nn.Dropout(0.5), nn.Linear(1024, 10))


def cnn_step(torch, batch):
    """One synchronized training step of the peer model at `batch`."""
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
    return step


def print_profile(torch, batch, steps=10):
    """torch.profiler's per-kernel table of `steps` steps after warm-up."""
    step = cnn_step(torch, batch)
    for _ in range(5):
        step()
    activities = [torch.profiler.ProfilerActivity.CPU,
                  torch.profiler.ProfilerActivity.CUDA]
    with torch.profiler.profile(activities=activities) as prof:
        for _ in range(steps):
            step()
    print(f"torch train_step_cnn_{batch}, {steps} steps:")
    print(prof.key_averages().table(sort_by="cuda_time_total", row_limit=25,
                                    max_name_column_width=70))


def tapeflow_rates(path):
    """images/s of train_step_cnn_<batch>/tapeflow in a benchmark JSON."""
    rates = {}
    for case, runs in common.tapeflow_runs(path, TOOL).items():
        if not case.startswith("train_step_cnn_"):
            continue
        batch = int(case.rsplit("_", 1)[1])
        for run in runs:
            if "images" in run:
                rates[batch] = max(rates.get(batch, 0.0), float(run["images"]))
    return rates


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    common.add_timing_arguments(parser, warmup=5, seconds=1.0)
    parser.add_argument("--profile", action="store_true",
                        help="also print torch.profiler's kernel table")
    args = parser.parse_args()
    torch = common.load_torch(TOOL)
    if torch is None:
        return 0
    ours = tapeflow_rates(args.tapeflow_json) if args.tapeflow_json else {}
    for batch in BATCHES:
        theirs = batch / common.seconds_per_call(
            cnn_step(torch, batch), args.warmup, args.seconds, args.repeats)
        line = f"train_step_cnn_{batch}: torch {theirs:.0f} images/s"
        if batch in ours:
            line += (f", tapeflow {ours[batch]:.0f} images/s, "
                     f"tapeflow/torch {ours[batch] / theirs:.2f}x")
        elif args.tapeflow_json:
            line += ", tapeflow: no result in " + args.tapeflow_json
        print(line, flush=True)
        if args.profile:
            print_profile(torch, batch)
    return 0


if __name__ == "__main__":
    sys.exit(main())
