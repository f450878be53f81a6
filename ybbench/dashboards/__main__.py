"""python -m ybbench.dashboards [OUT_DIR]: regenerate the dashboard JSON."""

import sys
from pathlib import Path

from . import OUT, write

for path in write(Path(sys.argv[1]) if len(sys.argv) > 1 else OUT):
    print(path)
