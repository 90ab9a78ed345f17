"""Reading a JSON input file named on the command line, with errors a user can act on."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from elastream.core.errors import OptionError


def read_json(path: Path, option: str) -> Any:
    """The parsed contents of ``path``.

    An unreadable file or invalid JSON is an :class:`OptionError` naming ``option``, the reason
    and the path.
    """
    try:
        text = Path(path).read_text()
    except OSError as error:
        raise OptionError(option, f"must be a readable file ({error.strerror})",
                          str(path)) from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise OptionError(option, f"must be valid JSON ({error.msg} at line "
                          f"{error.lineno} column {error.colno})", str(path)) from None
