"""How a command's JSON answer reaches standard output: alone, printed last.

A command that answers in JSON (``--json``, and ``elastream run``'s summary) returns a
:class:`JsonAnswer` instead of printing. While it works, :func:`stdout_reserved` points file
descriptor 1 at standard error, so whatever a library prints there (from Python or from C: a
solver's banner, the JVM Spark starts, which inherits the descriptor) lands on standard error;
then :func:`print_answer` prints the document to the real standard output. Its stdout is one
JSON document by construction, whatever the dependencies print.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from typing import Any

from elastream.core.fd_redirect import STDERR_FD, STDOUT_FD, redirected


@dataclass(frozen=True)
class JsonAnswer:
    """A command's JSON document and its exit status."""

    document: Any
    exit_code: int = 0


@contextmanager
def stdout_reserved(reserve: bool) -> Iterator[None]:
    """While the block runs, descriptor 1 writes to standard error (if ``reserve``)."""
    with redirected(STDOUT_FD, STDERR_FD) if reserve else nullcontext():
        yield


def print_answer(answer: JsonAnswer) -> int:
    """Print the document as indented JSON on standard output; return the exit status.

    A reader that closed the pipe early (``| head``) ends the printing quietly, as in any
    Unix tool: no traceback, and nothing more to standard output at exit.
    """
    try:
        print(json.dumps(answer.document, indent=2), file=sys.stdout, flush=True)
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return answer.exit_code
