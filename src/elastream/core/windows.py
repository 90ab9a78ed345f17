"""Window specifications: tumbling and hopping (sliding) event-time windows, several per job.

Window instances of a spec with length ``L`` and slide ``S`` are ``[k·S, k·S + L)`` for every
integer ``k`` (aligned to the Unix epoch, as Spark's ``window()`` with no offset). All times are
integer milliseconds. Every length and slide of a job is a multiple of its *pane*, the gcd of all
of them: panes are the partial windows the compute stage builds and the consolidate stage merges.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

from elastream.core.errors import OptionError

UNIT_MS = {"s": 1_000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}
_DURATION = re.compile(r"^\s*(\d+)\s*(s|m|h|d)\s*$")


def parse_duration(text: str, *, option: str, allow_zero: bool = False) -> int:
    """Milliseconds in a duration such as ``90s``, ``15m``, ``6h`` or ``1d``.

    >>> parse_duration("6h", option="windows")
    21600000
    >>> parse_duration("0m", option="lateness", allow_zero=True)
    0
    """
    match = _DURATION.match(text)
    if not match:
        raise OptionError(option, "must be a whole number with a unit s, m, h or d", text)
    value = int(match.group(1)) * UNIT_MS[match.group(2)]
    if value < 0 or (value == 0 and not allow_zero):
        raise OptionError(option, "must be a positive duration", text)
    return value


def format_duration(ms: int) -> str:
    """Shortest exact text for a duration.

    >>> format_duration(21600000), format_duration(90000)
    ('6h', '90s')
    """
    for unit in ("d", "h", "m", "s"):
        if ms % UNIT_MS[unit] == 0:
            return f"{ms // UNIT_MS[unit]}{unit}"
    return f"{ms}ms"


@dataclass(frozen=True, order=True)
class WindowSpec:
    """One window definition: ``length_ms`` long, a new instance every ``slide_ms``.

    >>> WindowSpec.parse("24h/1h")
    WindowSpec(length_ms=86400000, slide_ms=3600000)
    >>> WindowSpec.parse("1h").is_tumbling
    True
    """

    length_ms: int
    slide_ms: int

    def __post_init__(self) -> None:
        if self.length_ms <= 0 or self.slide_ms <= 0:
            raise OptionError("windows", "needs a positive length and slide", str(self))
        if self.slide_ms > self.length_ms:
            raise OptionError("windows", "needs a slide no longer than its length", str(self))

    @classmethod
    def parse(cls, text: str) -> WindowSpec:
        """Parse ``LENGTH`` (tumbling) or ``LENGTH/SLIDE``."""
        parts = text.split("/")
        if len(parts) > 2 or not parts[0].strip():
            raise OptionError("windows", "must look like LENGTH or LENGTH/SLIDE, e.g. 6h/1h", text)
        length = parse_duration(parts[0], option="windows")
        slide = parse_duration(parts[1], option="windows") if len(parts) == 2 else length
        if slide > length:
            raise OptionError("windows", "needs a slide no longer than its length", text)
        return cls(length, slide)

    @property
    def is_tumbling(self) -> bool:
        """True when instances do not overlap."""
        return self.slide_ms == self.length_ms

    def __str__(self) -> str:
        length = format_duration(self.length_ms)
        return length if self.is_tumbling else f"{length}/{format_duration(self.slide_ms)}"

    def starts_ending_in(self, after_ms: int, upto_ms: int) -> range:
        """Starts of the instances whose end lies in ``(after_ms, upto_ms]``.

        >>> list(WindowSpec(5, 2).starts_ending_in(-1, 10))
        [-4, -2, 0, 2, 4]
        """
        first = ((after_ms - self.length_ms) // self.slide_ms + 1) * self.slide_ms
        last = ((upto_ms - self.length_ms) // self.slide_ms) * self.slide_ms
        return range(first, last + 1, self.slide_ms)

    def next_end_after(self, after_ms: int) -> int:
        """End of the first instance that ends after ``after_ms``.

        >>> WindowSpec(5, 2).next_end_after(5)
        7
        """
        return self.starts_ending_in(after_ms, after_ms + self.slide_ms).start + self.length_ms


def pane_ms(specs: Sequence[WindowSpec]) -> int:
    """The pane: gcd of every length and slide.

    >>> pane_ms([WindowSpec.parse(w) for w in ("1h", "6h/1h", "24h/1h")])
    3600000
    """
    if not specs:
        raise OptionError("windows", "needs at least one window", "none")
    return math.gcd(*(v for s in specs for v in (s.length_ms, s.slide_ms)))


def unique_specs(specs: Sequence[WindowSpec]) -> tuple[WindowSpec, ...]:
    """Specs without duplicates, shortest first (the order the consolidation DAG builds them)."""
    return tuple(sorted(set(specs)))
