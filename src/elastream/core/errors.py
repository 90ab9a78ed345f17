"""One exception base for the package; the CLI turns these into one-line messages."""

from __future__ import annotations


class ElastreamError(Exception):
    """Base of every error elastream raises on purpose."""


class OptionError(ElastreamError, ValueError):
    """An option or parameter broke a rule; the message names the option, the rule and the value.

    >>> str(OptionError("--slots", "must be a positive integer", "0"))
    "--slots must be a positive integer, got '0'"
    """

    def __init__(self, option: str, rule: str, value: object) -> None:
        self.option = option
        self.rule = rule
        self.value = value
        super().__init__(f"{option} {rule}, got {value!r}")


class DataError(ElastreamError):
    """Input data cannot be used at all (missing file, missing column, corrupt download)."""


class SessionError(ElastreamError):
    """The SparkSession lacks a setting a job needs; the message names it and how to set it."""


class JobError(ElastreamError):
    """A job failed while it ran; the message names the root cause and where the full log is."""
