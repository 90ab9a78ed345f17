"""Pane partials of one batch of records: Enorm's compute stage, vectorised with Arrow.

Enorm (Madsen, Zhou, Su, DEBS 2016, §4.2, §6.1) splits a windowed aggregation into a compute
stage that reduces records to *panes* — partial aggregates of each key over the gcd of every
window length and slide — and a consolidate stage that merges panes into windows. This module is
the compute stage's arithmetic for one batch of records: a grouped aggregation (Arrow's hash
aggregation, in C++) over the group columns, with one column per partial
(:func:`elastream.core.aggregates.partial_columns`):

* ``n`` — records in the group (``count(*)``);
* ``sum_c`` — sum of value column ``c``, null when every value is null (SQL's ``sum``);
* ``cnt_c`` — non-null values of ``c`` (SQL's ``count(c)``);
* ``min_c`` / ``max_c`` — nulls skipped, null when every value is null.

A batch holds each group once; the consolidate stage merges a pane's partials from several
batches and slots (:mod:`elastream.algorithms.windows.assemble`), so nothing here keeps state.
Cost: one hash aggregation, O(records).

>>> import pyarrow as pa
>>> records = pa.table({"key": ["a", "a", "b"], "start": [0, 0, 0], "v": [1.0, None, 5.0]})
>>> out = pane_partials(records, ["key", "start"], ["n", "sum_v", "cnt_v"])
>>> out.sort_by("key").to_pylist()  # doctest: +NORMALIZE_WHITESPACE
[{'key': 'a', 'start': 0, 'n': 2, 'sum_v': 1.0, 'cnt_v': 1},
 {'key': 'b', 'start': 0, 'n': 1, 'sum_v': 5.0, 'cnt_v': 1}]
"""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa

from elastream.core.aggregates import RECORDS

_ARROW = {"sum": "sum", "cnt": "count", "min": "min", "max": "max"}


def value_column(partial: str, prefix: str = "") -> str:
    """The input column a partial reads (``sum_delay`` → ``delay``), after ``prefix``."""
    return prefix + partial.split("_", 1)[1]


def pane_partials(records: pa.Table, group: Sequence[str], partials: Sequence[str], *,
                  prefix: str = "") -> pa.Table:
    """One row per distinct ``group`` value: the group columns, then ``partials`` in order.

    Value column ``c`` of a partial is read from column ``prefix + c`` of ``records``.
    """
    aggregations: list[tuple[str | list[str], str]] = []
    names: list[str] = []
    for partial in partials:
        if partial == RECORDS:
            aggregations.append(([], "count_all"))
            names.append("count_all")
            continue
        func = _ARROW[partial.split("_", 1)[0]]
        column = value_column(partial, prefix)
        aggregations.append((column, func))
        names.append(f"{column}_{func}")
    grouped = records.group_by(list(group), use_threads=False).aggregate(aggregations)
    columns = [grouped[g] for g in group] + [grouped[n] for n in names]
    return pa.table(columns, names=[*group, *partials])
