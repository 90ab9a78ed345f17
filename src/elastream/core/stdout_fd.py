"""Point file descriptor 1 elsewhere for a while, for libraries that print from C.

A redirect of Python's ``sys.stdout`` does not reach code that writes to descriptor 1 itself:
HiGHS (``highspy`` 1.16 prints its banner when a ``highspy.Highs`` is constructed, before any
option can be set), or the JVM Spark starts (it inherits the descriptor). :func:`stdout_to`
points the descriptor at ``os.devnull`` (silence) or at standard error (keep the noise, off
standard output) and back, flushing Python's and C's buffers at both ends, so nothing written
inside lands outside or the other way round.

The descriptor is the process's, shared by all threads: whatever another thread prints while
it is redirected goes the same way. Redirections nest; the lock only keeps two threads from
swapping the descriptor at the same instant.
"""

from __future__ import annotations

import ctypes
import os
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress

STDOUT_FD = 1
_SWAP = threading.Lock()


def _libc_fflush() -> None:
    """``fflush(NULL)``: C's stdio buffers out to their descriptors (a no-op where unavailable)."""
    with suppress(OSError, AttributeError, TypeError):  # no C library to load (not POSIX)
        ctypes.CDLL(None).fflush(None)


def flush_stdout() -> None:
    """Write out what Python and C hold in their standard-output buffers."""
    if sys.stdout is not None:
        sys.stdout.flush()
    _libc_fflush()


@contextmanager
def stdout_to(target: str | int) -> Iterator[None]:
    """Within the block, descriptor 1 writes to ``target`` (a path, or an open descriptor).

    >>> import os
    >>> with stdout_to(os.devnull):
    ...     os.write(1, b"not shown")
    9
    """
    with _SWAP:
        flush_stdout()
        saved = os.dup(STDOUT_FD)
        if isinstance(target, str):
            opened = os.open(target, os.O_WRONLY)
            os.dup2(opened, STDOUT_FD)
            os.close(opened)
        else:
            os.dup2(target, STDOUT_FD)
    try:
        yield
    finally:
        with _SWAP:
            flush_stdout()
            os.dup2(saved, STDOUT_FD)
            os.close(saved)
