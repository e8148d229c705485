"""PyTorch peer of tapeflow_bench_cuda's nn and small-op cases (CUDA.md 7).

The shapes of benchmarks/bench_cases.hpp: conv2d a, b and c (stride 1, pad
on every side) forward and train, max_pool2d 2x2 stride 2 on both pool
shapes and batch norm (training) on 64x64x56x56, float32 on cuda:0; and
small_ops_1K_pipelined, a chain of 64 dependent elementwise ops on 1K
elements with one synchronization at the end (bench_cuda.cpp's). "train"
is the forward and the gradients of every input given a fixed dy, as in
benchmarks/cuda/bench_cuda_nn.cpp; each iteration ends in a synchronization.
TF32 is off (tapeflow's "highest" multiplies in float32); cuDNN picks its
algorithms as PyTorch does by default (torch.backends.cudnn.benchmark off).

Prints each case's time per iteration. With --tapeflow-json (the benchmark
JSON of tapeflow_bench_cuda) it also prints tapeflow's time and the speed
ratio torch time / tapeflow time (above 1: tapeflow is faster). Exits 0 with
a message where torch or a CUDA device is missing.
"""
import argparse
import sys

import gpu_peer_common as common

TOOL = "gpu_peer_nn"

# Ops per iteration of small_ops_1K_pipelined (bench_cuda.cpp's kSmallOpChain).
SMALL_OP_CHAIN = 64
# (name, n, c, o, hw, k, pad): bench_cases.hpp's kConvShapes.
CONV_SHAPES = (("a", 64, 1, 32, 28, 5, 2), ("b", 64, 32, 64, 14, 5, 2),
               ("c", 32, 64, 64, 56, 3, 1))
# (name suffix, NCHW dims): kPoolShapes.
POOL_SHAPES = (("", (64, 32, 28, 28)), ("_14x14", (64, 64, 14, 14)))
BN_SHAPE, BN_EPS = (64, 64, 56, 56), 1e-3


def cases(torch):
    """(name, callable) per case, each call ending synchronized."""
    device = torch.device("cuda:0")
    torch.manual_seed(42)

    def uniform(*shape):
        return torch.rand(*shape, device=device) * 2 - 1

    def timed(fwd, sources, dy, train):
        def call():
            if train:
                torch.autograd.grad(fwd(), sources, dy)
            else:
                with torch.no_grad():
                    fwd()
            torch.cuda.synchronize(device)
        return call

    out = []
    for name, n, c, o, hw, k, pad in CONV_SHAPES:
        x = uniform(n, c, hw, hw).requires_grad_()
        w = uniform(o, c, k, k).requires_grad_()
        size = hw + 2 * pad - k + 1
        dy = uniform(n, o, size, size)
        fwd = (lambda x=x, w=w, pad=pad:
               torch.nn.functional.conv2d(x, w, padding=pad))
        for train in (False, True):
            out.append((f"conv2d_{name}_{'train' if train else 'fwd'}",
                        timed(fwd, [x, w], dy, train)))
    for name, dims in POOL_SHAPES:
        x = uniform(*dims).requires_grad_()
        dy = uniform(dims[0], dims[1], dims[2] // 2, dims[3] // 2)
        fwd = lambda x=x: torch.nn.functional.max_pool2d(x, 2, 2)
        out.append((f"max_pool2d{name}_train", timed(fwd, [x], dy, True)))
    x = uniform(*BN_SHAPE).requires_grad_()
    scale = uniform(BN_SHAPE[1]).requires_grad_()
    offset = uniform(BN_SHAPE[1]).requires_grad_()
    dy = uniform(*BN_SHAPE)
    fwd = lambda: torch.nn.functional.batch_norm(
        x, None, None, scale, offset, training=True, eps=BN_EPS)
    out.append(("batch_norm_train", timed(fwd, [x, scale, offset], dy, True)))
    b = torch.full((1024,), 0.5, device=device)
    c = torch.full((1024,), 0.999, device=device)

    def small_ops():
        y = c
        for i in range(SMALL_OP_CHAIN):
            y = y + b if i % 2 else y * c
        torch.cuda.synchronize(device)
    out.append(("small_ops_1K_pipelined", small_ops))
    return out


def tapeflow_seconds(path):
    """Seconds per iteration of each <case>/tapeflow in a benchmark JSON."""
    scale = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}
    return {
        case: min(float(run["real_time"]) * scale[run.get("time_unit", "ns")]
                  for run in runs)
        for case, runs in common.tapeflow_runs(path, TOOL).items()
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    common.add_timing_arguments(parser, warmup=3, seconds=0.3)
    args = parser.parse_args()
    torch = common.load_torch(TOOL)
    if torch is None:
        return 0
    ours = tapeflow_seconds(args.tapeflow_json) if args.tapeflow_json else {}
    for name, call in cases(torch):
        theirs = common.seconds_per_call(call, args.warmup, args.seconds,
                                         args.repeats)
        line = f"{name}: torch {theirs * 1e6:.1f} us"
        if name in ours:
            line += (f", tapeflow {ours[name] * 1e6:.1f} us, "
                     f"tapeflow speed {theirs / ours[name]:.2f}x torch's")
        elif args.tapeflow_json:
            line += ", tapeflow: no result in " + args.tapeflow_json
        print(line, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
