#!/usr/bin/env python3
"""Markdown comparison tables from tapeflow_bench (Google Benchmark JSON).

Runs the benchmark binary once per thread count (env TAPEFLOW_BENCH_THREADS)
or reads JSON files it wrote, and prints one table per thread count: for each
case the wall time (and throughput) of every implementation, and

    speedup vs <peer> = peer wall time / tapeflow wall time

so > 1 means tapeflow is faster, < 1 means the peer is faster. For the
throughput cases this equals tapeflow throughput / peer throughput.

Usage:
  python3 tools/bench_table.py build/benchmarks/tapeflow_bench --threads 1,2
  python3 tools/bench_table.py build/benchmarks/tapeflow_bench --threads 2 \\
      --min-time 0.2 --filter 'matmul' --save-json /tmp/bench
  python3 tools/bench_table.py /tmp/bench/threads_1.json /tmp/bench/threads_2.json
JSON files of one thread count (e.g. partial runs with different filters) are
merged into one table.
Arguments after `--` go to the binary unchanged (e.g. --benchmark_repetitions=3;
with repetitions the median is used).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

PEERS = ["libtorch", "onednn", "raw_read", "stream"]
UNIT_NS = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}


def run_binary(binary, threads, min_time, bench_filter, extra, save_dir):
    """Runs the binary with TAPEFLOW_BENCH_THREADS=threads; returns its JSON."""
    env = dict(os.environ, TAPEFLOW_BENCH_THREADS=str(threads))
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(save_dir or tmp, f"threads_{threads}.json")
        cmd = [binary, f"--benchmark_out={out}", "--benchmark_out_format=json"]
        if min_time is not None:
            cmd.append(f"--benchmark_min_time={min_time}")
        if bench_filter:
            cmd.append(f"--benchmark_filter={bench_filter}")
        cmd += extra
        print(f"# running (TAPEFLOW_BENCH_THREADS={threads}): {' '.join(cmd)}",
              file=sys.stderr, flush=True)
        # Console output goes to stderr as progress; the table reads the file.
        rc = subprocess.call(cmd, env=env, stdout=sys.stderr)
        if rc != 0:
            sys.exit(f"bench_table: {binary} exited with status {rc}")
        with open(out) as f:
            return json.load(f)


def split_name(name):
    """'matmul_256/onednn/real_time' -> ('matmul_256', 'onednn')."""
    parts = [p for p in name.split("/") if p != "real_time"]
    if len(parts) < 2:
        return name, "?"
    return "/".join(parts[:-1]), parts[-1]


def collect(doc):
    """{(case, impl): row} with times in ns; the median of repeated runs."""
    runs, errors, aggregates = {}, {}, {}
    for b in doc.get("benchmarks", []):
        key = split_name(b.get("run_name", b["name"]))
        if b.get("error_occurred"):
            errors[key] = b.get("error_message", "error")
            continue
        if b.get("run_type") == "aggregate":
            if b.get("aggregate_name") == "median":
                aggregates[key] = b
            continue
        runs.setdefault(key, []).append(b)
    rows = {}
    for key, bs in runs.items():
        med = aggregates.get(key)
        pick = lambda f: med[f] if med and f in med else statistics.median(
            x[f] for x in bs)
        scale = UNIT_NS[bs[0].get("time_unit", "ns")]
        row = {"time_ns": pick("real_time") * scale}
        if "bytes_per_second" in bs[0]:
            row["gbps"] = pick("bytes_per_second") / 1e9
        if "GFLOP" in bs[0]:
            row["gflops"] = pick("GFLOP")
        if "per_op" in bs[0]:
            row["per_op_ns"] = pick("per_op") * 1e9
        if "wait_us" in bs[0]:
            row["wait_us"] = pick("wait_us")
        rows[key] = row
    for key, msg in errors.items():
        rows[key] = {"error": msg}
    return rows


def fmt_time(ns):
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("us", 1e3)):
        if ns >= scale:
            return f"{ns / scale:.3g} {unit}"
    return f"{ns:.3g} ns"


def fmt_cell(row):
    if row is None:
        return "–"
    if "error" in row:
        return f"error: {row['error']}"
    cell = fmt_time(row["time_ns"])
    if "gflops" in row:
        cell += f" ({row['gflops']:.1f} GFLOP/s)"
    elif "gbps" in row:
        cell += f" ({row['gbps']:.1f} GB/s)"
    elif "per_op_ns" in row:
        cell += f" ({fmt_time(row['per_op_ns'])}/op)"
    elif "wait_us" in row:
        cell += f" (waits {fmt_time(row['wait_us'] * 1e3)}/step)"
    return cell


def speedup(tf, peer):
    if not tf or not peer or "error" in tf or "error" in peer:
        return "–"
    return f"{peer['time_ns'] / tf['time_ns']:.2f}x"


def table(doc):
    rows = collect(doc)
    cases = []
    for case, _ in rows:  # keeps the binary's (registration) order
        if case not in cases:
            cases.append(case)
    peers = [p for p in PEERS if any(impl == p for _, impl in rows)]
    others = sorted({impl for _, impl in rows} - set(PEERS) - {"tapeflow"})
    head = ["case", "tapeflow"]
    for p in peers:
        head += [p, f"speedup vs {p}"]
    head += others
    lines = ["| " + " | ".join(head) + " |",
             "|" + "|".join(["---"] + ["---:"] * (len(head) - 1)) + "|"]
    for case in cases:
        tf = rows.get((case, "tapeflow"))
        cells = [case, fmt_cell(tf)]
        for p in peers:
            peer = rows.get((case, p))
            cells += [fmt_cell(peer), speedup(tf, peer)]
        cells += [fmt_cell(rows.get((case, o))) for o in others]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def header(doc):
    ctx = doc.get("context", {})
    threads = ctx.get("tapeflow_bench_threads", "?")
    bits = [f"threads={threads}"]
    for k in ("libtorch_threads", "omp_max_threads", "openblas_threads",
              "libtorch_version", "num_cpus", "mhz_per_cpu"):
        if k in ctx:
            bits.append(f"{k}={ctx[k]}")
    if "load_avg" in ctx:
        bits.append("load_avg=" + ",".join(f"{x:.2f}" for x in ctx["load_avg"]))
    return f"### {threads} thread(s)\n\n" + " · ".join(bits)


def merge_by_threads(docs):
    """One document per thread count: JSON files of partial runs (e.g. one
    per --benchmark_filter) with the same thread count become one table."""
    merged = {}
    for doc in docs:
        t = doc.get("context", {}).get("tapeflow_bench_threads", "?")
        if t not in merged:
            merged[t] = {"context": doc.get("context", {}), "benchmarks": []}
        merged[t]["benchmarks"] += doc.get("benchmarks", [])
    order = lambda t: (0, int(t)) if str(t).isdigit() else (1, 0)
    return [merged[t] for t in sorted(merged, key=order)]


def main():
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("inputs", nargs="+",
                    help="the tapeflow_bench binary, or JSON files it wrote")
    ap.add_argument("--threads", default="2",
                    help="comma-separated thread counts, one run each (default 2)")
    ap.add_argument("--min-time", type=float, default=None,
                    help="--benchmark_min_time in seconds (e.g. 0.2)")
    ap.add_argument("--filter", default=None, help="--benchmark_filter regex")
    ap.add_argument("--save-json", default=None,
                    help="directory to keep threads_<n>.json in")
    args, extra = ap.parse_known_args()
    extra = [a for a in extra if a != "--"]

    docs = []
    if all(p.endswith(".json") for p in args.inputs):
        for path in args.inputs:
            with open(path) as f:
                docs.append(json.load(f))
    elif len(args.inputs) == 1:
        if args.save_json:
            os.makedirs(args.save_json, exist_ok=True)
        counts = [int(t) for t in args.threads.split(",") if t.strip()]
        for t in counts:
            docs.append(run_binary(args.inputs[0], t, args.min_time,
                                   args.filter, extra, args.save_json))
    else:
        ap.error("give one binary, or only .json files")

    docs = merge_by_threads(docs)
    print("speedup = peer wall time / tapeflow wall time: > 1 means tapeflow "
          "is faster. Times are wall-clock per iteration (median when "
          "repeated); GB/s counts inputs + output, GFLOP/s 2n^3 per matmul.\n")
    for doc in docs:
        print(header(doc) + "\n")
        print(table(doc) + "\n")


if __name__ == "__main__":
    main()
