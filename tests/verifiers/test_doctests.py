"""The examples in the verifiers' docstrings run."""

import doctest
import importlib

import pytest

MODULES = ["normalize", "numwords", "equivalence", "extract", "mathcheck", "reward"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(f"verifiers.{name}")
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0
