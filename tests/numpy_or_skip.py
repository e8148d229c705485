"""NumPy for the interoperability checks, or meson's SKIP (exit 77).

Usage in a check script: `from numpy_or_skip import numpy as np`."""
import os
import sys

try:
    import numpy
except ImportError:
    # Debian's python3-numpy belongs to /usr/bin/python3, which a pyenv or
    # virtualenv python3 earlier on PATH does not see.
    if os.path.exists("/usr/bin/python3") and sys.executable != "/usr/bin/python3":
        os.execv("/usr/bin/python3", ["/usr/bin/python3"] + sys.argv)
    print("python3-numpy is not installed: skipping")
    sys.exit(77)
