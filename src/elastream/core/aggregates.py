"""Aggregates a job computes per key and window, and the partial state that merges into them.

Each aggregate is ``FUNC`` or ``FUNC:COLUMN`` with ``FUNC`` in sum, count, min, max, avg; a bare
``count`` counts records. SQL null semantics: nulls are skipped; ``sum``/``min``/``max``/``avg`` of
no non-null value is null; ``count:c`` counts non-null values of ``c``. ``avg`` is kept as sum and
count, so partials of any window merge exactly.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from elastream.core.errors import OptionError

FUNCTIONS = ("sum", "count", "min", "max", "avg")
_COLUMN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

RECORDS = "n"
"""Name of the partial column holding the record count of a pane (``count(*)``)."""


@dataclass(frozen=True)
class AggSpec:
    """One requested aggregate.

    >>> AggSpec.parse("avg:delay").output_name, AggSpec.parse("count").output_name
    ('avg_delay', 'count')
    >>> AggSpec.parse("avg:delay").partials
    ('sum_delay', 'cnt_delay')
    """

    func: str
    column: str | None = None

    def __post_init__(self) -> None:
        if self.func not in FUNCTIONS:
            raise OptionError("aggs", f"function must be one of {', '.join(FUNCTIONS)}", self.func)
        if self.column is None and self.func != "count":
            raise OptionError("aggs", f"{self.func} needs a column, as in {self.func}:COLUMN",
                              self.func)
        if self.column is not None and not _COLUMN.match(self.column):
            raise OptionError("aggs", "column must be a plain identifier", self.column)

    @classmethod
    def parse(cls, text: str) -> AggSpec:
        """Parse ``FUNC`` or ``FUNC:COLUMN``."""
        func, _, column = text.strip().partition(":")
        return cls(func.strip().lower(), column.strip() or None)

    @property
    def output_name(self) -> str:
        """Result column name: ``FUNC_COLUMN``, or ``count`` for a record count."""
        return self.func if self.column is None else f"{self.func}_{self.column}"

    @property
    def partials(self) -> tuple[str, ...]:
        """Partial columns this aggregate is computed from."""
        if self.column is None:
            return (RECORDS,)
        c = self.column
        return {
            "sum": (f"sum_{c}", f"cnt_{c}"),
            "count": (f"cnt_{c}",),
            "min": (f"min_{c}",),
            "max": (f"max_{c}",),
            "avg": (f"sum_{c}", f"cnt_{c}"),
        }[self.func]


def value_columns(aggs: Sequence[AggSpec]) -> tuple[str, ...]:
    """Input columns the aggregates read, in first-use order."""
    return tuple(dict.fromkeys(a.column for a in aggs if a.column is not None))


def partial_columns(aggs: Sequence[AggSpec]) -> tuple[str, ...]:
    """Every partial column the job keeps, record count first, without duplicates."""
    cols = [RECORDS] + [p for a in aggs for p in a.partials]
    return tuple(dict.fromkeys(cols))


def validate_aggs(aggs: Sequence[AggSpec]) -> tuple[AggSpec, ...]:
    """Reject an empty list and duplicates (they would produce the same output column)."""
    if not aggs:
        raise OptionError("aggs", "needs at least one aggregate", "none")
    names = [a.output_name for a in aggs]
    dup = next((n for n in names if names.count(n) > 1), None)
    if dup is not None:
        raise OptionError("aggs", "must not repeat an aggregate", dup)
    return tuple(aggs)
