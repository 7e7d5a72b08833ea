"""pytest's setup for the whole checkout: the docstring examples' namespace and ``make check``'s selection.

- The pruning examples of ``solutions/`` draw the 8-node graph of ``solutions.pruning``'s docstring, which
  the tests' builders make (``tests/graph_builders.py``).
- ``pytest --check`` (``make check``) runs the tests that train no model and start no server or browser,
  for the edit loop: it skips collecting the files of ``NOT_IN_CHECK`` and deselects the tests marked
  ``slow``. ``make test`` runs everything.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

# A test process (and each pytest-xdist worker) runs torch's OpenMP runtime and LightGBM's side by side.
# OpenMP threads spin while they wait by default; once torch has worked, its idle threads then take the
# cores from every later LightGBM fit, which runs many times slower. The policy is read when a runtime
# loads, so it is set here, before any test module imports torch or lightgbm (methods.gbdt.boosting
# sets it too, but only before its own import of lightgbm).
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

ROOT = Path(__file__).resolve().parent
_BUILDERS = ROOT / "tests" / "graph_builders.py"

# What `make check` leaves to `make test`: each file (or folder) trains models, starts a server or a browser,
# or runs the kit end to end.
NOT_IN_CHECK = {
    "tests/leaderboard": "the leaderboard server (in process, on a port, on PostgreSQL, in Chromium)",
    "tests/test_accel.py": "builds torch-scatter and runs torch's scatter ops",
    "tests/test_bench_additivity.py": "runs a benchmark",
    "tests/test_bench_attribution.py": "runs a benchmark",
    "tests/test_bench_engineered.py": "runs a benchmark (trains)",
    "tests/test_bench_fullscale.py": "runs a benchmark (trains)",
    "tests/test_bench_fusion.py": "runs a benchmark (trains)",
    "tests/test_bench_peers.py": "runs a benchmark's kit side (trains)",
    "tests/test_bench_real.py": "runs a benchmark (trains)",
    "tests/test_distributed.py": "trains with torchrun",
    "tests/test_gbdt.py": "trains the gbdt",
    "tests/test_gnn.py": "trains the gnn",
    "tests/test_gnn_engineered.py": "trains the gnn",
    "tests/test_gnn_fusion.py": "trains the gnn",
    "tests/test_gpu.py": "trains on a GPU",
    "tests/test_gpu_check.py": "runs the GPU check script end to end",
    "tests/test_gst.py": "trains the gnn",
    "tests/test_heuristic_prior.py": "trains the gbdt",
    "tests/test_notebooks.py": "executes the notebooks (they train)",
    "tests/test_rank.py": "trains the models it ranks with",
    "tests/test_readme.py": "runs the README's commands end to end",
    "tests/test_runner.py": "trains every method",
}


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--check", action="store_true",
                     help="make check: only the tests that train no model and start no server or browser "
                          "(conftest.py's NOT_IN_CHECK and the tests marked slow are left out)")


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    if not config.getoption("--check"):
        return None
    try:
        relative = collection_path.resolve().relative_to(ROOT).as_posix()
    except ValueError:
        return None
    return True if relative in NOT_IN_CHECK else None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not config.getoption("--check"):
        return
    slow = [item for item in items if item.get_closest_marker("slow")]
    if slow:
        config.hook.pytest_deselected(items=slow)
        items[:] = [item for item in items if not item.get_closest_marker("slow")]


@pytest.fixture(autouse=True)
def _docstring_example_graph(doctest_namespace: dict) -> None:
    if "example_graph" not in doctest_namespace:
        spec = importlib.util.spec_from_file_location("_doctest_graph_builders", _BUILDERS)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        doctest_namespace["example_graph"] = module.example_graph
