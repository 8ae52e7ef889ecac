"""``python -m evalstats``: the command line, as the ``evalstats`` script (:mod:`evalstats.cli`)."""

import sys

from evalstats.cli import main

sys.exit(main())
