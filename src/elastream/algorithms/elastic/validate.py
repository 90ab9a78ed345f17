"""Type checks the elastic modules share: Python and numpy numbers alike, never a bool.

>>> is_number(np.float32(2.5)), is_number(True), is_count(np.int64(3)), is_count(3.0)
(True, False, True, False)
"""

from __future__ import annotations

import numpy as np


def is_number(value: object) -> bool:
    """An int or float, Python's or numpy's (not a bool)."""
    return not isinstance(value, bool) and isinstance(value, int | float | np.integer
                                                      | np.floating)


def is_count(value: object) -> bool:
    """An integer, Python's or numpy's (not a bool)."""
    return not isinstance(value, bool) and isinstance(value, int | np.integer)
