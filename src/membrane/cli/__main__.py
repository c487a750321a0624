"""``python -m membrane.cli``: the ``membrane`` command without the console script."""

from __future__ import annotations

import sys

from membrane.cli import main

if __name__ == "__main__":
    sys.exit(main())
