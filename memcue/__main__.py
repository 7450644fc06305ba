"""``python -m memcue``: the ``memcue`` command."""

import sys

from memcue.cli import main

sys.exit(main())
