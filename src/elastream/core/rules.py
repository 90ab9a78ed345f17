"""The rules a value of an option follows, each written once for every layer.

Each check returns the value (as the plain Python type) or raises
:class:`~elastream.core.errors.OptionError` with the name it was given, the rule and the value:
the algorithms' option records, the simulators, the job's spec and the CLI (which names its
flags, :mod:`elastream.core.options`) all call these. Numbers are Python's or numpy's, never a
bool; a number is finite.

>>> integer("slots", 4), integer("seed", 0, low=0), number("tau", 0.2)
(4, 0, 0.2)
>>> integer("slots", 0)
Traceback (most recent call last):
...
elastream.core.errors.OptionError: slots must be an integer >= 1, got 0
>>> number("alpha", 1.5, high=1)
Traceback (most recent call last):
...
elastream.core.errors.OptionError: alpha must be a number in [0, 1], got 1.5
>>> number("rate", 0, above=0, unit="rows per second")
Traceback (most recent call last):
...
elastream.core.errors.OptionError: rate must be a finite number of rows per second > 0, got 0
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, TypeGuard

import numpy as np

from elastream.core.errors import OptionError


def is_count(value: object) -> TypeGuard[int]:
    """An integer, Python's or numpy's (not a bool)."""
    return not isinstance(value, bool) and isinstance(value, int | np.integer)


def is_number(value: object) -> TypeGuard[float]:
    """An int or float, Python's or numpy's (not a bool)."""
    return not isinstance(value, bool) and isinstance(value, int | float | np.integer
                                                      | np.floating)


def integer(name: str, value: object, *, low: int | None = 1, high: int | None = None,
            unit: str = "") -> int:
    """``value`` as an int if it is an integer in ``[low, high]`` (``None``: unbounded).

    ``unit``: what the integer counts, named in the rule.
    """
    if not is_count(value) or (low is not None and value < low) \
            or (high is not None and value > high):
        raise OptionError(name, integer_rule(low, high, unit), value)
    return int(value)


def integer_rule(low: int | None = 1, high: int | None = None, unit: str = "") -> str:
    """The rule :func:`integer` names.

    >>> integer_rule(), integer_rule(1, 8), integer_rule(None), integer_rule(0, unit="cores")
    ('must be an integer >= 1', 'must be an integer in [1, 8]', 'must be an integer', \
'must be a whole number of cores >= 0')
    """
    noun = f"a whole number of {unit}" if unit else "an integer"
    if low is not None and high is not None:
        return f"must be {noun} in [{low}, {high}]"
    if low is not None:
        return f"must be {noun} >= {low}"
    return f"must be {noun}" + (f" <= {high}" if high is not None else "")


def number(name: str, value: object, *, low: float | None = 0, above: float | None = None,
           high: float | None = None, below: float | None = None, unit: str = "") -> float:
    """``value`` as a float if it is a finite number within the bounds.

    ``low``/``high``: closed bounds; ``above``/``below``: open ones (either replaces the
    closed bound on its side); ``unit``: what the number counts, named in the rule.
    """
    low = None if above is not None else low
    high = None if below is not None else high
    ok = is_number(value) and math.isfinite(value) \
        and (low is None or value >= low) and (above is None or value > above) \
        and (high is None or value <= high) and (below is None or value < below)
    if not ok:
        raise OptionError(name, number_rule(low=low, above=above, high=high, below=below,
                                            unit=unit), value)
    return float(value)  # type: ignore[arg-type]


def number_rule(*, low: float | None = 0, above: float | None = None,
                high: float | None = None, below: float | None = None, unit: str = "") -> str:
    """The rule :func:`number` names.

    >>> number_rule(), number_rule(above=0, unit="seconds"), number_rule(low=0, below=1)
    ('must be a finite number >= 0', 'must be a finite number of seconds > 0', \
'must be a number in [0, 1)')
    >>> number_rule(high=100, unit="percent"), number_rule(above=0, high=1e9)
    ('must be a percent in [0, 100]', 'must be a number in (0, 1000000000]')
    """
    start = None if low is None and above is None else (
        ("(", above) if above is not None else ("[", low))
    end = None if high is None and below is None else (
        (")", below) if below is not None else ("]", high))
    noun = unit if unit == "percent" else f"number of {unit}" if unit else "number"
    if start is not None and end is not None:
        return f"must be a {noun} in {start[0]}{_shown(start[1])}, {_shown(end[1])}{end[0]}"
    if start is not None:
        return f"must be a finite {noun} {'>' if start[0] == '(' else '>='} {_shown(start[1])}"
    if end is not None:
        return f"must be a finite {noun} {'<' if end[0] == ')' else '<='} {_shown(end[1])}"
    return f"must be a finite {noun}"


def _shown(bound: float | None) -> str:
    """A bound as a rule writes it: ``1000000000``, ``0.5``."""
    assert bound is not None
    return str(int(bound)) if float(bound).is_integer() else f"{bound:g}"


def choice(name: str, value: object, choices: Sequence[str]) -> str:
    """``value`` if it is one of ``choices``.

    >>> choice("mode", "watch", ("replay", "watch"))
    'watch'
    """
    if not isinstance(value, str) or value not in choices:
        raise OptionError(name, f"must be one of {', '.join(choices)}", value)
    return value


def bounds(name: str, value: object, *, low: int = 1) -> tuple[int, int]:
    """``(fewest, most)`` integers with ``low <= fewest <= most``.

    >>> bounds("autoscale", (1, 4))
    (1, 4)
    """
    pair: Any = value
    if not isinstance(pair, tuple | list) or len(pair) != 2 \
            or not all(is_count(v) for v in pair) or not low <= pair[0] <= pair[1]:
        shown = f"{pair[0]}:{pair[1]}" if isinstance(pair, tuple | list) and len(pair) == 2 \
            else value
        raise OptionError(name, f"must be FEWEST:MOST with {low} <= FEWEST <= MOST", shown)
    return int(pair[0]), int(pair[1])
