"""A HiGHS instance that prints nothing, whatever highspy version the ranges let in.

HiGHS logs to the console until its ``output_flag`` is false, and the option can only be set on
an instance that exists. highspy 1.15 printed nothing before the first solve, so setting the
option after construction was enough; highspy 1.16 prints its banner ("Running HiGHS 1.16.0
…") from C, to file descriptor 1, while ``highspy.Highs()`` constructs (its constructor enables
callbacks, a logged call), and takes no options. So the constructor runs with descriptor 1
pointed at ``os.devnull`` (:func:`~elastream.core.fd_redirect.redirected`), then every output
option is turned off before any other call. A caller's ``--json`` output stays pure.

>>> options = silent_highs().getOptions()
>>> options.output_flag, options.log_to_console
(False, False)
"""

from __future__ import annotations

import os

import highspy

from elastream.core.fd_redirect import STDOUT_FD, redirected


def silent_highs() -> highspy.Highs:
    """A new ``highspy.Highs`` with ``output_flag`` and ``log_to_console`` off, built silently."""
    with redirected(STDOUT_FD, os.devnull):
        h = highspy.Highs()  # type: ignore[no-untyped-call]  # highspy's wrapper is untyped
    h.setOptionValue("output_flag", False)
    h.setOptionValue("log_to_console", False)
    return h
