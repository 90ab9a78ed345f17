"""One rule for every family of planners: options built from flat settings, unknown ones refused.

A family (the balancing planners of :mod:`elastream.control.planners`, the migration planners
of :mod:`elastream.algorithms.migration.registry`, …) maps each planner's name to an entry with
an ``options_type``: a frozen dataclass, or ``None`` for a planner without parameters.

**Settings are flat.** A planner's settings are the fields of its options, where a field that
is itself an options dataclass (ALBIC's ``milp: MilpOptions``) stands for that dataclass's own
settings — so ``time_limit`` is a setting of ``albic`` and lands in its ``milp`` part. A field
composes an options dataclass when that dataclass is its default factory
(``milp: MilpOptions = field(default_factory=MilpOptions)``; its metadata :func:`hiding` can hide
settings the holder sets itself); a name may occur once in the flattened fields.

**Two kinds of settings.** Settings *of one planner* — what a user names for it — must each be
one of its settings, else :class:`~elastream.core.errors.OptionError` names the setting, the
settings the planner takes, and the value. *Shared* settings are what a caller gives every
planner of the family alike (a job's move budget, an experiment's seed or time limit): each must
be a setting of some planner of the family, so a misspelling still fails, and a planner takes
those it has. A planner's own settings win over shared ones.

>>> from dataclasses import dataclass, field
>>> @dataclass(frozen=True)
... class Inner:
...     max_moves: int = 4
>>> @dataclass(frozen=True)
... class Outer:
...     inner: Inner = field(default_factory=Inner)
...     seed: int = 0
>>> family = {"outer": Entry(Outer), "bare": Entry(None)}
>>> setting_names(Outer)
('max_moves', 'seed')
>>> build(family, "outer", {"seed": 2}, shared={"max_moves": 1})
Outer(inner=Inner(max_moves=1), seed=2)
>>> build(family, "bare", {}, shared={"seed": 2}) is None
True
>>> build(family, "outer", {"sead": 2})  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
elastream.core.errors.OptionError: sead is not a setting of planner 'outer' (it takes max_moves, ...
>>> build(family, "bare", {}, shared={"max_move": 1})  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
elastream.core.errors.OptionError: max_move is not a setting of any planner (they take ...
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Protocol, TypeVar

from elastream.core import rules
from elastream.core.errors import OptionError


class Registered(Protocol):
    """What a family's registry keeps per planner: at least its options type."""

    @property
    def options_type(self) -> type[Any] | None:
        """A frozen dataclass of the planner's parameters, or ``None`` if it has none."""
        ...


E = TypeVar("E", bound=Registered)


@dataclass(frozen=True)
class Entry:
    """The least a family's entry can be: the planner's options type."""

    options_type: type[Any] | None


def entry(family: Mapping[str, E], name: str, *, option: str = "planner") -> E:
    """The planner ``name`` of ``family``; :class:`OptionError` on ``option`` if there is none."""
    return family[rules.choice(option, name, tuple(family))]


def hiding(*names: str) -> dict[str, tuple[str, ...]]:
    """Metadata of a composing field whose settings ``names`` the holder sets itself.

    ``milp: MilpOptions = field(default_factory=MilpOptions, metadata=hiding("together",
    "pin"))``: ALBIC's settings include the MILP's, except the two it computes every round.
    """
    return {_HIDE: names}


def setting_names(options_type: type[Any] | None) -> tuple[str, ...]:
    """The flat settings of an options type, in field order (composed options expanded)."""
    if options_type is None:
        return ()
    names: list[str] = []
    for f in _fields(options_type):
        names.extend(f.names())
    if len(set(names)) != len(names):
        raise TypeError(f"{options_type.__name__} repeats a setting name: {names}")
    return tuple(names)


def build(family: Mapping[str, Registered], name: str, settings: Mapping[str, Any], *,
          shared: Mapping[str, Any] | None = None, option: str = "planner") -> Any:
    """The options of planner ``name`` from its ``settings`` and the ``shared`` ones (module doc).

    ``None`` for a planner without options. Raises :class:`OptionError` for an unknown name
    (on ``option``), a setting the planner does not take, a shared setting no planner takes,
    and whatever the options type's own checks raise.
    """
    options_type = entry(family, name, option=option).options_type
    takes = setting_names(options_type)
    for key, value in settings.items():
        if key not in takes:
            said = f"it takes {', '.join(takes)}" if takes else "it takes none"
            raise OptionError(key, f"is not a setting of planner {name!r} ({said})", value)
    shared = shared or {}
    known = {n for e in family.values() for n in setting_names(e.options_type)}
    for key, value in shared.items():
        if key not in known:
            raise OptionError(key, f"is not a setting of any planner (they take "
                              f"{', '.join(sorted(known))})", value)
    chosen = {k: v for k, v in shared.items() if k in takes} | dict(settings)
    if options_type is None:
        return None
    return _make(options_type, chosen)


def values(options: Any) -> dict[str, Any]:
    """The flat settings of an options instance with their values (``{}`` for ``None``)."""
    if options is None:
        return {}
    out: dict[str, Any] = {}
    for f in _fields(type(options)):
        value = getattr(options, f.name)
        if f.composed is None:
            out[f.name] = value
        else:
            out.update((k, v) for k, v in values(value).items() if k not in f.hidden)
    return out


def replaced(options: Any, changes: Mapping[str, Any]) -> Any:
    """``options`` with the flat settings of ``changes`` it has replaced; the others ignored.

    ``options`` itself when nothing changes (a planner bound to its options, ``fish``, can then
    still be called with them).
    """
    if options is None:
        return None
    kwargs: dict[str, Any] = {}
    for f in _fields(type(options)):
        value = getattr(options, f.name)
        if f.composed is not None:
            inner = replaced(value, {k: v for k, v in changes.items() if k not in f.hidden})
            if inner is not value:
                kwargs[f.name] = inner
        elif f.name in changes and changes[f.name] != value:
            kwargs[f.name] = changes[f.name]
    return dataclasses.replace(options, **kwargs) if kwargs else options


def _make(options_type: type[Any], flat: Mapping[str, Any]) -> Any:
    """An ``options_type`` with the flat settings ``flat`` (the others at their defaults)."""
    kwargs: dict[str, Any] = {}
    for f in _fields(options_type):
        if f.composed is None:
            if f.name in flat:
                kwargs[f.name] = flat[f.name]
            continue
        inner = {k: v for k, v in flat.items() if k in f.names()}
        if inner:
            kwargs[f.name] = _make(f.composed, inner)
    return options_type(**kwargs)


_HIDE: Final = "elastream.hide"


@dataclass(frozen=True)
class _Field:
    """An init field of an options type.

    ``composed``: the options type it composes, if any; ``hidden``: what it hides of its
    settings (:func:`hiding`).
    """

    name: str
    composed: type[Any] | None
    hidden: frozenset[str]

    def names(self) -> tuple[str, ...]:
        if self.composed is None:
            return (self.name,)
        return tuple(n for n in setting_names(self.composed) if n not in self.hidden)


def _fields(options_type: type[Any]) -> list[_Field]:
    """The init fields of ``options_type``.

    A field composes an options dataclass when that dataclass is its default factory
    (``milp: MilpOptions = field(default_factory=MilpOptions)``).
    """
    out: list[_Field] = []
    for f in dataclasses.fields(options_type):
        if f.init:
            make = f.default_factory
            inner = make if isinstance(make, type) and dataclasses.is_dataclass(make) else None
            out.append(_Field(f.name, inner, frozenset(f.metadata.get(_HIDE, ()))))
    return out
