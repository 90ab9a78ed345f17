"""How many examples a property test tries.

Each test names its own count; ``ELASTREAM_EXAMPLES_SCALE`` (default 1) scales them all. The
newest-versions run (``make test-latest``) uses a quarter: it checks that the same code works
on newer libraries, which any example shows, while the pinned run keeps every example.
"""

from __future__ import annotations

import os

SCALE = float(os.environ.get("ELASTREAM_EXAMPLES_SCALE", "1"))


def examples(count: int) -> int:
    """``count`` scaled (at least 5)."""
    return max(5, round(count * SCALE))
