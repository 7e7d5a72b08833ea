"""Which source files are the rules: what the scorer version hashes and what a scoring export copies.

The rules are the files a score depends on, listed by name in ``RULE_FILES``: the collections and task
kinds, the metric, the validator and the scorer (with Kaggle's ``score()`` contract), and the errors
and wording they use. They import only numpy (and pandas inside the Kaggle ``score()`` call) and
nothing outside this list, so these files score a submission on their own
(``tests/test_architecture.py`` checks both). Everything else in the package (the statistics built
on the scorer, ``predictions.py``, the progress display, the data layer, the command line) decides
no score: editing it leaves the scorer version the leaderboard records unchanged.
"""

from __future__ import annotations

from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent

# Relative to the package folder, sorted (a stable order to hash). A file added to the rules is added here.
RULE_FILES: tuple[str, ...] = (
    "__init__.py",
    "collections.py",
    "errors.py",
    "kaggle_metric.py",
    "metrics/__init__.py",
    "metrics/checks.py",
    "metrics/layout.py",
    "metrics/packing.py",
    "metrics/pair_counts.py",
    "metrics/tile.py",
    "scoring.py",
    "submission/__init__.py",
    "submission/ids.py",
    "submission/reader.py",
    "submission/report.py",
    "submission/rules.py",
    "tasks.py",
    "text.py",
)


def rules_files() -> list[Path]:
    """The rules' source files, relative to the package folder, in ``RULE_FILES`` order."""
    return [Path(name) for name in RULE_FILES]
