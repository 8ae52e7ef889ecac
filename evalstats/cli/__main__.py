"""``python -m evalstats.cli``."""

import sys

from evalstats.cli import main

sys.exit(main())
