import sys

from ybbench.cli import main

sys.exit(main())
