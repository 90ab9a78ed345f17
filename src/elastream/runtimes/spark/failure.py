"""What made a Spark job fail, in one line, and the whole story for a log file.

A failure inside Spark reaches Python as a PySpark exception (``StreamingQueryException``,
``PythonException``, ``AnalysisException``, …) or a Py4J error, wrapping a chain of Java
exceptions whose messages may hold a Python worker's traceback. :func:`is_spark_failure`
tells them from other errors; :func:`root_cause` names the cause in one line:

- a Python worker's (or ``foreachBatch`` function's) exception: the line its traceback ends
  with, ``ValueError: bad record 7``, from the innermost Java exception whose message holds a
  Python traceback; when that is Py4J's (a call into the JVM failed, e.g. ``toArrow`` in a
  ``foreachBatch`` function: ``Py4JJavaError: An error occurred while calling o75.getResult``),
  the Java exception under it that names a Spark error class, the innermost of those
  (``SparkException: [FAILED_READ_FILE.PARQUET_COLUMN_DATA_TYPE_MISMATCH] … column [ts] …``),
  else the innermost;
- else the innermost Java exception's first line, its class by simple name:
  ``ChecksumException: Checksum error: file:/…/offsets/1 at 0 exp: 758006407 got: …``.

:func:`failure_report` is the full text: the Python traceback, then the Java stack trace with
every cause. PySpark keeps the Java exception in private attributes (``_origin``; Py4J's
``java_exception`` is public); without a live JVM only the Python side is there.
"""

from __future__ import annotations

import re
import traceback
from typing import Any

from py4j.protocol import Py4JError, Py4JJavaError
from pyspark.errors import PySparkException

TRACEBACK = "Traceback (most recent call last):"
PY4J_ERROR = ("py4j.protocol.Py4JJavaError", "Py4JJavaError")
_JAVA_LINE = re.compile(r"^(?::|Caused by:) (?:[a-z_$][\w$]*\.)+([A-Z][\w$]*): ?(.*)$",
                        re.MULTILINE)
"""A Java exception in a Py4J error's text: ``: org.….Name: message`` or ``Caused by: …``."""
_ERROR_CLASS = re.compile(r": \[[A-Z][A-Z0-9_]*(?:\.[A-Z0-9_]+)*\]")
"""A Spark error class at the start of a message: ``[FAILED_READ_FILE.NO_HINT]``."""
MOST_CAUSES = 64
"""Stop walking a Java cause chain after this many (a cycle guard)."""


def is_spark_failure(error: BaseException) -> bool:
    """Whether ``error`` came out of Spark (a PySpark exception or a Py4J error)."""
    return isinstance(error, PySparkException | Py4JError)


def root_cause(error: BaseException) -> str:
    """The cause of a Spark failure in one line (see the module's docstring)."""
    links = _links(error)
    for text in reversed(links):
        if TRACEBACK in text:
            line = python_exception_line(text)
            if line.startswith(PY4J_ERROR):
                return _java_root_in(text.rsplit(TRACEBACK, 1)[1]) or line
            return line
    return _first_line(links[-1])


def _java_root_in(text: str) -> str | None:
    r"""The Java exception a Py4J error's text names that says most: see :func:`root_cause`.

    >>> _java_root_in("py4j.protocol.Py4JJavaError: An error occurred while calling o7.x.\n"
    ...     ": org.apache.spark.SparkException: Exception thrown in awaitResult: \n"
    ...     "\tat org.apache.spark.util.X.awaitResult(X.scala:70)\n"
    ...     "Caused by: org.apache.spark.SparkException: [FAILED_READ_FILE.NO_HINT] a.parquet\n"
    ...     "Caused by: java.io.EOFException: end of file\n")
    'SparkException: [FAILED_READ_FILE.NO_HINT] a.parquet'
    """
    found = [f"{name}: {message}".strip() for name, message in _JAVA_LINE.findall(text)]
    classed = [line for line in found if _ERROR_CLASS.search(line)]
    chosen = classed or found
    return chosen[-1] if chosen else None


def python_exception_line(text: str) -> str:
    r"""The exception line the last Python traceback in ``text`` ends with.

    >>> python_exception_line('Job aborted. Traceback (most recent call last):\n'
    ...                       '  File "udf.py", line 3, in f\n    raise ValueError("bad 7")\n'
    ...                       'ValueError: bad 7\n')
    'ValueError: bad 7'
    """
    block = text.rsplit(TRACEBACK, 1)[1]
    for line in block.splitlines():
        if line.strip() and not line[0].isspace():
            return line.strip()
    return _first_line(block)


def failure_report(error: BaseException) -> str:
    """The Python traceback of ``error`` and the Java stack traces behind it, causes included."""
    parts = ["".join(traceback.format_exception(error))]
    current: BaseException | None = error
    while current is not None and len(parts) <= MOST_CAUSES:
        chain = _java_chain(current)
        if chain:  # the Java exception itself: its stack trace lists every cause
            parts.append(f"Java stack trace:\n{_java_stack(chain[0])}")
            break
        stack = getattr(current, "_stackTrace", None)
        if stack:
            parts.append(f"Java stack trace of {_first_line(str(current))}:\n{stack}\n")
        current = getattr(current, "_cause", None)
    return "\n".join(parts)


def _links(error: BaseException) -> list[str]:
    """``Name: message`` of ``error`` and of every exception under it, outermost first.

    PySpark converts a Java exception to a Python one keeping the Java object (``_origin``)
    or only its text and a converted cause (``_cause``; e.g. ``StreamingQuery.exception()``);
    the Java objects are read while the JVM is alive.
    """
    links: list[str] = []
    current: BaseException | None = error
    while current is not None and len(links) < MOST_CAUSES:
        chain = _java_chain(current)
        if chain:
            links += [_java_text(e) for e in chain]
            break
        text = str(getattr(current, "_desc", None) or current)
        links.append(text if _QUALIFIED.match(text) else f"{type(current).__name__}: {text}")
        current = getattr(current, "_cause", None)
    return [_QUALIFIED.sub(r"\2:", link, count=1) for link in links]


_QUALIFIED = re.compile(r"^((?:[a-z_$][\w$]*\.)+)([A-Z][\w$]*):")
"""A Java exception's fully qualified class name before its message (``org.….Name: …``)."""


def _java_chain(error: BaseException) -> list[Any]:
    """The Java exception ``error`` keeps and its causes, outermost first (none: [])."""
    origin = error.java_exception if isinstance(error, Py4JJavaError) \
        else getattr(error, "_origin", None)
    chain: list[Any] = []
    try:
        while origin is not None and len(chain) < MOST_CAUSES:
            chain.append(origin)
            origin = origin.getCause()
    except Py4JError:  # the JVM is gone: what was read so far
        pass
    return chain


def _java_message(throwable: Any) -> str:
    try:
        return str(throwable.getMessage() or "")
    except Py4JError:
        return ""


def _java_text(throwable: Any) -> str:
    """``SimpleClassName: message``."""
    try:
        name = str(throwable.getClass().getSimpleName())
    except Py4JError:
        name = "Exception"
    message = _java_message(throwable)
    return f"{name}: {message}" if message else name


def _java_stack(throwable: Any) -> str:
    try:
        from pyspark import SparkContext

        jvm = SparkContext._jvm
        return str(getattr(jvm, "org.apache.spark.util.Utils").exceptionString(throwable))
    except (Py4JError, AttributeError, TypeError):
        return "(not available: the JVM is gone)\n"


def _first_line(text: str) -> str:
    return next((line.strip() for line in text.splitlines() if line.strip()), text.strip())
