"""A streaming job's configuration, validated at the boundary (CLI, API) before Spark starts."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from elastream.core.aggregates import AggSpec, validate_aggs
from elastream.core.errors import OptionError
from elastream.core.keygroups import validate_key_groups
from elastream.core.windows import WindowSpec, pane_ms, unique_specs

FORMATS = ("parquet", "csv", "json")
MODES = ("replay", "watch")


def format_of(path: Path) -> str:
    """Input format named by a file's suffix, else Parquet (folders, unknown suffixes).

    >>> format_of(Path("in.csv")), format_of(Path("flights")), format_of(Path("x.JSON"))
    ('csv', 'parquet', 'json')
    """
    suffix = path.suffix.lstrip(".").lower()
    return suffix if suffix in FORMATS else "parquet"


@dataclass(frozen=True)
class JobSpec:
    """Everything ``elastream run`` needs; see ``elastream run --help`` for each field."""

    input: Path
    output: Path
    time_col: str
    key_col: str
    aggs: tuple[AggSpec, ...]
    windows: tuple[WindowSpec, ...]
    format: str = "parquet"
    mode: str = "replay"
    slots: int = 4
    key_groups: int = 128
    planner: str = "flux"
    rows_per_batch: int = 100_000
    lateness_ms: int = 0
    max_batches: int | None = None
    max_moves: int = 4
    planner_options: dict[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        validate_aggs(self.aggs)
        object.__setattr__(self, "windows", unique_specs(self.windows))
        pane_ms(self.windows)
        if self.format not in FORMATS:
            raise OptionError("--format", f"must be one of {', '.join(FORMATS)}", self.format)
        if self.mode not in MODES:
            raise OptionError("--mode", f"must be one of {', '.join(MODES)}", self.mode)
        _positive("--slots", self.slots)
        validate_key_groups(self.key_groups)
        if self.slots > self.key_groups:
            raise OptionError("--slots", f"must not exceed --key-groups ({self.key_groups})",
                              self.slots)
        _positive("--rows-per-batch", self.rows_per_batch)
        if self.lateness_ms < 0:
            raise OptionError("--lateness", "must not be negative", self.lateness_ms)
        if self.max_batches is not None:
            _positive("--max-batches", self.max_batches)
        if self.max_moves < 0:
            raise OptionError("--max-moves", "must not be negative", self.max_moves)
        if self.time_col == self.key_col:
            raise OptionError("--key-col", "must differ from --time-col", self.key_col)
        for agg in self.aggs:
            if agg.column in (self.time_col, self.key_col):
                raise OptionError("--agg", "must aggregate a value column, not the time or key",
                                  agg.column)

    @property
    def pane_ms(self) -> int:
        """Pane length: gcd of every window length and slide."""
        return pane_ms(self.windows)

    @property
    def longest_ms(self) -> int:
        """Length of the longest window."""
        return max(w.length_ms for w in self.windows)


def _positive(option: str, value: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise OptionError(option, "must be a positive integer", value)
