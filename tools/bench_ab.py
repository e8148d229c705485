#!/usr/bin/env python3
"""Before/after ratios of two tapeflow_bench binaries, measured alternately.

Runs binary A, then B, then A, ... for --rounds rounds (each run with the
same filter, thread count and min time), so that a noisy machine slows both
alike, and prints for each case the median wall time of A and of B over all
rounds and the ratio A / B (> 1: B is faster). Build the "before" binary from
a worktree of the old commit, e.g.

  git worktree add /tmp/before <commit>
  (cd /tmp/before && meson setup build -Dbenchmarks=enabled && \\
   ninja -C build benchmarks/tapeflow_bench)
  python3 tools/bench_ab.py /tmp/before/build/benchmarks/tapeflow_bench \\
      build/benchmarks/tapeflow_bench --filter 'overhead|train_step_cnn' \\
      --threads 2 --rounds 5
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

UNIT_NS = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}


def run_once(binary, args, tmp, tag):
    """One run of `binary`; returns {case: wall time in ns}."""
    out = os.path.join(tmp, f"{tag}.json")
    cmd = [binary, f"--benchmark_out={out}", "--benchmark_out_format=json",
           f"--benchmark_filter={args.filter}",
           f"--benchmark_min_time={args.min_time}"]
    env = dict(os.environ, TAPEFLOW_BENCH_THREADS=str(args.threads))
    rc = subprocess.call(cmd, env=env, stdout=subprocess.DEVNULL)
    if rc != 0:
        sys.exit(f"bench_ab: {binary} exited with status {rc}")
    with open(out) as f:
        data = json.load(f)
    return {b["name"]: b["real_time"] * UNIT_NS[b["time_unit"]]
            for b in data["benchmarks"] if b.get("run_type") == "iteration"}


def fmt(ns):
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("us", 1e3)):
        if ns >= scale:
            return f"{ns / scale:.3g} {unit}"
    return f"{ns:.3g} ns"


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("before")
    p.add_argument("after")
    p.add_argument("--filter", default=".")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--min-time", default="0.2")
    args = p.parse_args()
    times = {"before": {}, "after": {}}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.rounds):
            for tag in ("before", "after"):
                binary = getattr(args, tag)
                for case, ns in run_once(binary, args, tmp, tag).items():
                    times[tag].setdefault(case, []).append(ns)
            print(f"# round {r + 1}/{args.rounds} done", file=sys.stderr)
    print(f"| case ({args.threads} thread(s), median of {args.rounds}) "
          "| before | after | before / after | spread of the ratio |")
    print("|---|---|---|---|---|")
    for case in times["before"]:
        if case not in times["after"]:
            continue
        b = statistics.median(times["before"][case])
        a = statistics.median(times["after"][case])
        name = case.replace("/real_time", "")
        # Ratios of the runs paired by round: how far one round can stray.
        pairs = [x / y for x, y in zip(times["before"][case],
                                       times["after"][case])]
        print(f"| {name} | {fmt(b)} | {fmt(a)} | {b / a:.3f} "
              f"| {min(pairs):.2f}-{max(pairs):.2f} |")


if __name__ == "__main__":
    main()
