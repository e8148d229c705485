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

A process's times can sit a few percent apart from the next process's (where
its buffers landed, which core's caches it found warm), as much as the gaps a
table is read for. --processes N runs the binary N times per thread count,
alternating the thread counts, and each cell is the median of the N
processes' medians, with their spread:

  python3 tools/bench_table.py build/benchmarks/tapeflow_bench --threads 1,2 \
      --processes 5 --filter 'conv2d|pool|batch_norm' \
      -- --benchmark_repetitions=3
Arguments after `--` go to the binary unchanged (e.g. --benchmark_repetitions=3;
with repetitions the median is used).
"""
import argparse
import glob
import json
import os
import statistics
import subprocess
import sys
import tempfile

PEERS = ["libtorch", "onednn", "raw_read", "stream"]
UNIT_NS = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}


def run_binary(binary, threads, min_time, bench_filter, extra, save_dir,
               process=None):
    """Runs the binary with TAPEFLOW_BENCH_THREADS=threads; returns its JSON
    (saved as threads_<n>.json, or threads_<n>_p<process>.json)."""
    env = dict(os.environ, TAPEFLOW_BENCH_THREADS=str(threads))
    with tempfile.TemporaryDirectory() as tmp:
        suffix = "" if process is None else f"_p{process}"
        out = os.path.join(save_dir or tmp, f"threads_{threads}{suffix}.json")
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


FIELDS = (("time_ns", "real_time"), ("gbps", "bytes_per_second"),
          ("gflops", "GFLOP"), ("per_op_ns", "per_op"), ("wait_us", "wait_us"))
FIELD_SCALE = {"gbps": 1e-9, "per_op_ns": 1e9}


def process_row(med, bs):
    """One process's row: its median aggregate where it repeated the case,
    else the median of its runs; times in ns."""
    pick = lambda f: med[f] if med and f in med else statistics.median(
        x[f] for x in bs)
    row = {}
    for name, field in FIELDS:
        if field in bs[0]:
            row[name] = pick(field) * FIELD_SCALE.get(name, 1.0)
    row["time_ns"] *= UNIT_NS[bs[0].get("time_unit", "ns")]
    return row


def collect(doc):
    """{(case, impl): row}: per process the median of repeated runs, then
    the median over processes (with the range of their times in `spread`)."""
    runs, errors, aggregates = {}, {}, {}
    for b in doc.get("benchmarks", []):
        key = split_name(b.get("run_name", b["name"]))
        proc = b.get("process", 0)
        if b.get("error_occurred"):
            errors[key] = b.get("error_message", "error")
            continue
        if b.get("run_type") == "aggregate":
            if b.get("aggregate_name") == "median":
                aggregates[(key, proc)] = b
            continue
        runs.setdefault(key, {}).setdefault(proc, []).append(b)
    rows = {}
    for key, by_proc in runs.items():
        per = [process_row(aggregates.get((key, p)), bs)
               for p, bs in sorted(by_proc.items())]
        # A counter some process lacks is left out rather than half-taken.
        fields = set.intersection(*(set(r) for r in per))
        row = {f: statistics.median(r[f] for r in per) for f in fields}
        row["processes"] = len(per)
        if len(per) > 1:
            row["spread"] = (min(r["time_ns"] for r in per),
                             max(r["time_ns"] for r in per))
        rows[key] = row
    # An error shows where no process ran the case.
    for key, msg in errors.items():
        rows.setdefault(key, {"error": msg})
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
    if "spread" in row:
        low, high = row["spread"]
        cell += f" [{fmt_time(low)} – {fmt_time(high)}]"
    return cell


def speedup(tf, peer):
    if not tf or not peer or "error" in tf or "error" in peer:
        return "–"
    return f"{peer['time_ns'] / tf['time_ns']:.2f}x"


def table(rows):
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


def header(doc, rows):
    ctx = doc.get("context", {})
    threads = ctx.get("tapeflow_bench_threads", "?")
    bits = [f"threads={threads}"]
    for k in ("libtorch_threads", "omp_max_threads", "openblas_threads",
              "libtorch_version", "num_cpus", "mhz_per_cpu"):
        if k in ctx:
            bits.append(f"{k}={ctx[k]}")
    processes = max((r.get("processes", 1) for r in rows.values()), default=1)
    if processes > 1:
        bits.append(f"processes={processes} (median of their medians)")
    if "load_avg" in ctx:
        bits.append("load_avg=" + ",".join(f"{x:.2f}" for x in ctx["load_avg"]))
    return f"### {threads} thread(s)\n\n" + " · ".join(bits)


def merge_by_threads(docs):
    """One document per thread count: JSON files of partial runs (e.g. one
    per --benchmark_filter) with the same thread count become one table, each
    file's entries marked with its process number."""
    merged = {}
    for doc in docs:
        t = doc.get("context", {}).get("tapeflow_bench_threads", "?")
        if t not in merged:
            merged[t] = {"context": doc.get("context", {}), "benchmarks": [],
                         "files": 0}
        proc = merged[t]["files"]
        merged[t]["files"] += 1
        merged[t]["benchmarks"] += [dict(b, process=proc)
                                    for b in doc.get("benchmarks", [])]
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
    ap.add_argument("--processes", type=int, default=1,
                    help="runs per thread count, alternated (default 1)")
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
        if args.processes < 1:
            ap.error("--processes must be at least 1")
        if args.save_json:
            # Earlier runs' files would be read with these as one table.
            for t in counts:
                for old in glob.glob(os.path.join(args.save_json,
                                                  f"threads_{t}*.json")):
                    os.remove(old)
        for p in range(1, args.processes + 1):
            for t in counts:
                docs.append(run_binary(args.inputs[0], t, args.min_time,
                                       args.filter, extra, args.save_json,
                                       p if args.processes > 1 else None))
    else:
        ap.error("give one binary, or only .json files")

    docs = merge_by_threads(docs)
    print("speedup = peer wall time / tapeflow wall time: > 1 means tapeflow "
          "is faster. Times are wall-clock per iteration (median when "
          "repeated); GB/s counts inputs + output, GFLOP/s 2n^3 per matmul.\n")
    for doc in docs:
        rows = collect(doc)
        print(header(doc, rows) + "\n")
        print(table(rows) + "\n")


if __name__ == "__main__":
    main()
