#!/usr/bin/env python3
"""Rewrites a CUDA source's launches for the CUDA emulator (tools/cuda_emu).

    kernel<T><<<grid, block, smem, stream>>>(args)
becomes
    ::tapeflow::cuda_emu::Launch(__FILE__, __LINE__, grid, block, smem,
        stream).kernel([](auto&... a) { kernel<T>(a...); })(args)

which g++ compiles with cuda_emu.hpp. The kernel is called inside a generic
lambda so that template arguments the launch left to deduction are deduced
from the arguments, as nvcc does. Nothing else in the source changes, line
breaks stay where they were, and #line keeps errors and the emulator's
reports on the original file.

    launch_syntax.py INPUT OUTPUT
"""
import os
import re
import sys

# A kernel's name, qualified or not, with template arguments nested up to
# two deep, then the launch configuration.
KERNEL = r"[A-Za-z_][\w:]*(?:\s*<(?:[^<>;]|<(?:[^<>;]|<[^<>;]*>)*>)*>)?"
LAUNCH = re.compile(r"(" + KERNEL + r")(\s*)<<<(.*?)>>>", re.DOTALL)


def rewrite(text):
    def launch(match):
        kernel, space, config = match.groups()
        # The kernel's own line breaks go where the kernel was.
        breaks = "\n" * kernel.count("\n") + space
        kernel = " ".join(kernel.split())
        return ("%s::tapeflow::cuda_emu::Launch(__FILE__, __LINE__, %s)"
                ".kernel([](auto&... a) { %s(a...); })"
                % (breaks, config, kernel))

    return LAUNCH.sub(launch, text)


def main(source, output):
    with open(source, encoding="utf-8") as f:
        text = f.read()
    rewritten = '#line 1 "%s"\n' % os.path.abspath(source) + rewrite(text)
    with open(output + ".tmp", "w", encoding="utf-8") as f:
        f.write(rewritten)
    os.replace(output + ".tmp", output)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
