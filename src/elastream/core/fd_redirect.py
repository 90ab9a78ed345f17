"""Point a file descriptor (standard output or error) elsewhere for a while.

A redirect of Python's ``sys.stdout`` does not reach code that writes to descriptor 1 itself:
HiGHS (``highspy`` 1.16 prints its banner when a ``highspy.Highs`` is constructed, before any
option can be set), or the JVM Spark starts and its Python workers (they inherit descriptors 1
and 2 when they start). :func:`redirected` points the descriptor itself at a file (appended;
``os.devnull`` to silence) or at another descriptor, and back, flushing Python's and C's
buffers at both ends, so nothing written inside lands outside or the other way round.

A descriptor is the process's, shared by all threads: whatever another thread writes to it
while it is redirected goes the same way. Redirections nest; the lock only keeps two threads
from swapping a descriptor at the same instant.
"""

from __future__ import annotations

import ctypes
import os
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress

STDOUT_FD = 1
STDERR_FD = 2
_SWAP = threading.Lock()


def _libc_fflush() -> None:
    """``fflush(NULL)``: C's stdio buffers out to their descriptors (a no-op where unavailable)."""
    with suppress(OSError, AttributeError, TypeError):  # no C library to load (not POSIX)
        ctypes.CDLL(None).fflush(None)


def flush_standard_streams() -> None:
    """Write out what Python and C hold in their standard-output and -error buffers."""
    for stream in (sys.stdout, sys.stderr):
        if stream is not None:
            stream.flush()
    _libc_fflush()


@contextmanager
def redirected(fd: int, target: str | os.PathLike[str] | int) -> Iterator[None]:
    """Within the block, descriptor ``fd`` writes to ``target`` (a file path, or a descriptor).

    >>> import os
    >>> with redirected(1, os.devnull):
    ...     os.write(1, b"not shown")
    9
    """
    with _SWAP:
        flush_standard_streams()
        saved = os.dup(fd)
        if isinstance(target, int):
            os.dup2(target, fd)
        else:
            opened = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
            os.dup2(opened, fd)
            os.close(opened)
    try:
        yield
    finally:
        with _SWAP:
            flush_standard_streams()
            os.dup2(saved, fd)
            os.close(saved)

