"""What the PyTorch peers of tapeflow_bench_cuda share (gpu_peer_cnn.py,
gpu_peer_nn.py): importing torch with TF32 off, timing a synchronized
callable, and reading tapeflow's benchmark JSON."""
import json
import time


def load_torch(tool):
    """torch with TF32 off, or None (after saying why) where torch or a CUDA
    device is missing: the peers then exit 0, so that tools/gpu_check.sh
    can call them anywhere."""
    try:
        import torch
    except ImportError as e:
        print(f"{tool}: PyTorch is not importable ({e}); nothing to run")
        return None
    if not torch.cuda.is_available():
        print(f"{tool}: torch {torch.__version__} sees no CUDA device; "
              "nothing to run")
        return None
    # tapeflow's default precision ("highest") multiplies in float32.
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    print(f"{tool}: torch {torch.__version__}, CUDA {torch.version.cuda}, "
          f"cuDNN {torch.backends.cudnn.version()}, "
          f"{torch.cuda.get_device_name(0)}, TF32 off")
    return torch


def seconds_per_call(fn, warmup, seconds, repeats):
    """The best of `repeats` timings of about `seconds` each, after warm-up:
    seconds per call of fn (which ends synchronized)."""
    for _ in range(warmup):
        fn()
    best = float("inf")
    for _ in range(repeats):
        calls, start = 0, time.perf_counter()
        while True:
            fn()
            calls += 1
            elapsed = time.perf_counter() - start
            if elapsed >= seconds:
                break
        best = min(best, elapsed / calls)
    return best


def tapeflow_runs(path, tool):
    """{case: [run, ...]} of the <case>/tapeflow... entries of a benchmark
    JSON that ran without error; {} (after saying why) when unreadable."""
    try:
        with open(path) as f:
            runs = json.load(f).get("benchmarks", [])
    except (OSError, ValueError) as e:
        print(f"{tool}: no tapeflow results ({e})")
        return {}
    out = {}
    for run in runs:
        parts = run.get("name", "").split("/")
        if len(parts) >= 2 and parts[1] == "tapeflow" and \
                "error_occurred" not in run:
            out.setdefault(parts[0], []).append(run)
    return out


def add_timing_arguments(parser, warmup, seconds):
    """The options every peer takes."""
    parser.add_argument("--tapeflow-json",
                        help="tapeflow_bench_cuda's --benchmark_out file")
    parser.add_argument("--warmup", type=int, default=warmup)
    parser.add_argument("--seconds", type=float, default=seconds,
                        help="length of one timing")
    parser.add_argument("--repeats", type=int, default=3)
