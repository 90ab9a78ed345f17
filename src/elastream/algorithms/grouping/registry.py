"""Build any grouping scheme by its short name: the single entry point the CLI and simulator use.

* ``sg`` shuffle grouping, round-robin (:mod:`.shuffle`) — no parameters.
* ``fg`` field grouping, hash mod n (:mod:`.field`) — no parameters.
* ``pkg`` partial key grouping (:mod:`.pkg`) — ``block`` (16384).
* ``dc`` D-Choices (:mod:`.d_choices`) — ``block``, ``capacity`` (1000), ``theta`` (1/5n),
  ``epsilon`` (1e-4).
* ``wc`` W-Choices (:mod:`.w_choices`) — ``block``, ``capacity`` (1000), ``theta`` (1/5n).
* ``ch`` consistent hashing (:mod:`.consistent_hash`) — ``virtual_nodes`` (100).
* ``fish`` FISH (:mod:`.fish`) — ``block``, ``alpha`` (0.2), ``epoch`` (1000), ``kmax``
  (1000), ``theta`` (1/4n), ``d_min`` (2), ``interval`` (10 s), ``service_time`` (None),
  ``virtual_nodes`` (100), ``assignment`` (``"heuristic"`` = Algorithm 3, or ``"count"`` =
  fewest tuples sent, the paper's "traditional" assignment), ``candidates`` (``"ring"`` =
  consistent hashing, or ``"hash"`` = ``HASH(k) mod n``, FISH without CH).

Every scheme starts with workers ``0 … num_workers − 1`` and takes ``seed`` (default 0).
``capacities`` (relative speed per worker id, as in the simulator's config) is used by FISH's
worker assignment; the other schemes balance tuple counts and ignore it (it is still checked).

>>> scheme = make_scheme("pkg", 4, seed=1, block=1024)
>>> scheme.name, scheme.route(np.array([5, 5]), np.zeros(2)).shape
('pkg', (2,))
>>> make_scheme("pkg", 4, blocks=2)  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
elastream.core.errors.OptionError: blocks is not a parameter of scheme 'pkg' ...
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from elastream.algorithms.grouping.base import GroupingScheme
from elastream.algorithms.grouping.consistent_hash import ConsistentHashGrouping
from elastream.algorithms.grouping.d_choices import DChoices
from elastream.algorithms.grouping.field import FieldGrouping
from elastream.algorithms.grouping.fish import FishGrouping, check_capacities
from elastream.algorithms.grouping.pkg import PartialKeyGrouping
from elastream.algorithms.grouping.shuffle import ShuffleGrouping
from elastream.algorithms.grouping.w_choices import WChoices
from elastream.core import rules
from elastream.core.errors import OptionError

SCHEMES: Final = ("sg", "fg", "pkg", "dc", "wc", "ch", "fish")

PARAMETERS: Final[dict[str, tuple[str, ...]]] = {
    "sg": (),
    "fg": (),
    "pkg": ("block",),
    "dc": ("block", "capacity", "theta", "epsilon"),
    "wc": ("block", "capacity", "theta"),
    "ch": ("virtual_nodes",),
    "fish": ("block", "alpha", "epoch", "kmax", "theta", "d_min", "interval", "service_time",
             "virtual_nodes", "assignment", "candidates"),
}
"""The keyword parameters each scheme accepts besides ``seed`` and ``capacities``."""

_BUILDERS: Final[dict[str, Callable[..., GroupingScheme]]] = {
    "sg": ShuffleGrouping,
    "fg": FieldGrouping,
    "pkg": PartialKeyGrouping,
    "dc": DChoices,
    "wc": WChoices,
    "ch": ConsistentHashGrouping,
    "fish": FishGrouping,
}


def make_scheme(
    name: str,
    num_workers: int,
    *,
    seed: int = 0,
    capacities: npt.NDArray[np.float64] | None = None,
    **params: Any,
) -> GroupingScheme:
    """A fresh scheme ``name`` (one of :data:`SCHEMES`) over workers ``0 … num_workers − 1``.

    Raises :class:`~elastream.core.errors.OptionError` naming the offending parameter for an
    unknown scheme or parameter, or a value that breaks a parameter's rule.
    """
    rules.choice("scheme", name, SCHEMES)
    workers = rules.integer("num_workers", num_workers)
    rules.integer("seed", seed, low=None)
    speeds = check_capacities(capacities)
    if speeds is not None and len(speeds) < workers:
        raise OptionError("capacities", f"must give a speed for each of {workers} workers",
                          len(speeds))
    allowed = PARAMETERS[name]
    for option, value in params.items():
        if option not in allowed:
            takes = ", ".join(allowed) or "none"
            raise OptionError(option, f"is not a parameter of scheme {name!r} (it takes: {takes})",
                              value)
    if name == "fish":
        params["capacities"] = speeds
    return _BUILDERS[name](range(workers), seed=int(seed), **params)
