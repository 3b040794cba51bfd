"""`not COMMAND...`: succeed when COMMAND fails and fail when it succeeds (LLVM's not, for lit)."""

import subprocess
import sys

if __name__ == "__main__":
    status = subprocess.call(sys.argv[1:])
    sys.exit(0 if status != 0 else 1)
