"""Reference solutions, laid out by program (docs/architecture.md, "Where things are"):

- ``methods/``: the ranking methods (``random``, ``heuristic``, ``gbdt/``, ``gnn/``), what every method
  shares (``base``, ``selection``) and their ``registry``;
- ``solve/``: ``tpugraphs solve``, from its arguments to the submission and its report;
- ``rank/``: ``tpugraphs rank``, from a program to its ranked candidates;
- ``kinds/``: one adapter per task kind, all that the methods and both programs know of a kind;
- the shared parts: ``features/``, ``pruning/``, ``settings/``, ``store/`` (saved models), ``compute/``.

The import paths that 1.0's notebooks and docs showed (``solutions.runner``, ``solutions.method``,
``solutions.gbdt``, ...) keep working through 1.x: ``PATHS_1_0`` maps each to the module that now holds
it, and importing the old name gives that same module object (``competition.moved``).
"""

from __future__ import annotations

from competition.moved import keep_paths

#: 1.0 import path -> the module that holds it now (a package's submodules follow their package), or the
#: modules whose names it held together (``solutions.method``).
PATHS_1_0: dict[str, str | tuple[str, ...]] = {
    "solutions.runner": "solutions.solve.runner",
    "solutions.method": ("solutions.methods.base", "solutions.methods.registry", "solutions.store.saved"),
    "solutions.baselines": "solutions.methods.random",
    "solutions.heuristics": "solutions.methods.heuristic",
    "solutions.dedup": "solutions.features.dedup",
    "solutions.gbdt": "solutions.methods.gbdt",
    "solutions.gnn": "solutions.methods.gnn",
}

keep_paths(PATHS_1_0)
