"""What the docstring examples of ``solutions/`` need when pytest runs them (``make test``; testpaths).

The pruning examples draw the 8-node graph of ``solutions.pruning``'s docstring, which the tests'
builders make (``tests/graph_builders.py``).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

_BUILDERS = Path(__file__).resolve().parent / "tests" / "graph_builders.py"


@pytest.fixture(autouse=True)
def _docstring_example_graph(doctest_namespace: dict) -> None:
    if "example_graph" not in doctest_namespace:
        spec = importlib.util.spec_from_file_location("_doctest_graph_builders", _BUILDERS)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        doctest_namespace["example_graph"] = module.example_graph
