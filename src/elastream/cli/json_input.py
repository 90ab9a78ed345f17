"""Reading a JSON input file named on the command line, with errors a user can act on."""

from __future__ import annotations

import json
from collections.abc import Sequence
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


def read_instance_object(path: Path, fields: Sequence[str], required: int) -> dict[str, Any]:
    """The JSON object in ``path`` (``--instance``), holding only ``fields``.

    The first ``required`` of ``fields`` must be there. Anything else is an
    :class:`OptionError` naming the field, the rule and the value.
    """
    data = read_json(path, "--instance")
    if not isinstance(data, dict):
        needed = ", ".join(fields[:required])
        raise OptionError("instance", f"must be a JSON object with {needed}",
                          type(data).__name__)
    for key in data:
        if key not in fields:
            raise OptionError(key, f"is not an instance field (one of {', '.join(fields)})",
                              data[key])
    for key in fields[:required]:
        if key not in data:
            raise OptionError(key, "is required in the instance", None)
    return data
