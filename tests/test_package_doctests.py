"""The doctests of the migration, elastic and fusion packages and of the chain model
(pytest's ``testpaths`` does not reach ``src``)."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import elastream.algorithms.elastic
import elastream.algorithms.fusion
import elastream.algorithms.migration

MODULES = [*sorted(f"{package.__name__}.{info.name}"
                   for package in (elastream.algorithms.migration, elastream.algorithms.elastic,
                                   elastream.algorithms.fusion)
                   for info in pkgutil.iter_modules(package.__path__)), "elastream.core.chain"]


@pytest.mark.parametrize("name", MODULES)
def test_doctests(name: str) -> None:
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0
    if name.rsplit(".", 1)[1] not in ("__init__",):
        assert result.attempted > 0, f"{name} has no doctest example"
