"""`python -m dedup`: see dedup.cli."""

import sys

from dedup.cli import main

sys.exit(main())
