"""The elastic modules' doctests (pytest's ``testpaths`` does not reach ``src``)."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import elastream.algorithms.elastic as package

MODULES = sorted(f"{package.__name__}.{info.name}"
                 for info in pkgutil.iter_modules(package.__path__))


@pytest.mark.parametrize("name", MODULES)
def test_doctests(name: str) -> None:
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0
    if not name.endswith(".__init__"):
        assert result.attempted > 0, f"{name} has no doctest example"
