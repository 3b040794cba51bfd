#!/usr/bin/env python3
"""pagedir-run from a checkout, without installing: same entry point as the console script."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src"))

from pagedir.cli.run import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
