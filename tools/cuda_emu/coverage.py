#!/usr/bin/env python3
"""Lines of the CUDA backend that never ran, from gcov's JSON reports.

    coverage.py REPOSITORY REPORT.gcov.json.gz...

A line of a template counts once, summed over its instantiations, so a line
is reported only if no instantiation ran it. Only files of the repository
are reported (the standard library's and the toolkit's are not).
"""
import collections
import gzip
import json
import os
import sys


def main():
    repository = os.path.realpath(sys.argv[1])
    runs = collections.defaultdict(lambda: collections.defaultdict(int))
    for report in sys.argv[2:]:
        with gzip.open(report) as f:
            data = json.load(f)
        cwd = data.get("current_working_directory", "")
        for entry in data["files"]:
            path = os.path.realpath(os.path.join(cwd, entry["file"]))
            if not path.startswith(repository + os.sep):
                continue
            for line in entry["lines"]:
                runs[path][line["line_number"]] += line["count"]
    never = {}
    for path in sorted(runs):
        lines = runs[path]
        name = os.path.relpath(path, repository)
        unrun = sorted(n for n, count in lines.items() if count == 0)
        print(f"{name}: {len(lines) - len(unrun)} of {len(lines)} lines run")
        if unrun:
            never[path] = unrun
    for path, unrun in never.items():
        with open(path, encoding="utf-8") as f:
            source = f.read().split("\n")
        print(f"\n{os.path.relpath(path, repository)}: never run")
        for n in unrun:
            print(f"  {n:5d}  {source[n - 1].strip()}")


if __name__ == "__main__":
    main()
