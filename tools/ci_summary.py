#!/usr/bin/env python3
"""Turn meson's testlog.json files into one closing line 'N passed, N failed'.

doctest binaries are counted per TEST_CASE from their '[doctest] test cases:'
line; any other meson test counts as one. A doctest binary that crashed
before printing its summary counts as failed."""
import json
import re
import sys

logs = sys.argv[1:] or ['build/meson-logs/testlog.json']
DOCTEST = re.compile(r'\[doctest\] test cases:\s*(\d+)\s*\|\s*(\d+) passed\s*\|'
                     r'\s*(\d+) failed\s*\|\s*(\d+) skipped')
passed = failed = skipped = 0


def lines(paths):
    for path in paths:
        with open(path) as f:
            yield from f


for line in lines(logs):
    t = json.loads(line)
    result, out = t['result'], t.get('stdout') or ''
    counts = DOCTEST.findall(out)
    if counts:
        _, p, fl, s = map(int, counts[-1])
        passed += p
        failed += fl
        skipped += s
        if fl == 0 and result not in ('OK', 'SKIP'):  # crash after summary
            failed += 1
    elif result == 'OK':
        passed += 1
    elif result == 'SKIP':
        skipped += 1
    else:
        failed += 1
print(f'skipped (not counted): {skipped}')
print(f'{passed} passed, {failed} failed')
sys.exit(1 if failed else 0)
