"""``python -m tune_risk ...``: the ``tune-risk`` command (``tune_risk.cli``)."""

from __future__ import annotations

import sys

from tune_risk.cli import main

if __name__ == "__main__":
    sys.exit(main())
