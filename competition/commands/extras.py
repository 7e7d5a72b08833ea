"""Which optional part of the kit (a pyproject.toml extra) provides each third-party import.

``pip install .`` gives the rules alone (metric, validator, scorer, data tools: numpy, pandas, tqdm);
the reference solutions, the leaderboard, the notebooks and the Kaggle client are extras. A command
that needs a part that is not installed then fails on an import; ``tpugraphs`` turns that into one line
naming the extra to install instead of a traceback. tests/test_install.py checks this table against
pyproject.toml and against every import in the tree, so it cannot drift.
"""

from __future__ import annotations

PACKAGE = "tpugraphs-kit"  # pyproject.toml's project name

# top-level import name -> (distribution, the extra that declares it; "" for the base install)
PROVIDED_BY: dict[str, tuple[str, str]] = {
    "numpy": ("numpy", ""),
    "pandas": ("pandas", ""),
    "tqdm": ("tqdm", ""),
    "torch": ("torch", "solutions"),
    "torch_geometric": ("torch-geometric", "solutions"),
    "lightgbm": ("lightgbm", "solutions"),
    "scipy": ("scipy", ""),
    "fastapi": ("fastapi", "leaderboard"),
    "starlette": ("starlette", "leaderboard"),
    "uvicorn": ("uvicorn", "leaderboard"),
    "sqlalchemy": ("sqlalchemy", "leaderboard"),
    "jinja2": ("jinja2", "leaderboard"),
    "markupsafe": ("markupsafe", "leaderboard"),
    "python_multipart": ("python-multipart", "leaderboard"),
    "h11": ("h11", "leaderboard"),
    "icu": ("PyICU", "leaderboard"),
    "psycopg": ("psycopg", "leaderboard"),
    "yaml": ("PyYAML", "leaderboard"),
    "matplotlib": ("matplotlib", "notebooks"),
    "nbclient": ("nbclient", "notebooks"),
    "nbformat": ("nbformat", "notebooks"),
    "ipykernel": ("ipykernel", "notebooks"),
    "optuna": ("optuna", "tune"),
    "kaggle": ("kaggle", "kaggle"),
    "six": ("six", "kaggle"),
    "pytest": ("pytest", "dev"),
    "hypothesis": ("hypothesis", "dev"),
    "httpx": ("httpx", "dev"),
    "playwright": ("playwright", "dev"),
}


TORCH_CPU_FIRST = "pip install torch --index-url https://download.pytorch.org/whl/cpu"


def install_hint(extra: str) -> str:
    """The pip command that adds ``extra`` to an installed kit (installed from a clone with
    ``pip install .`` or ``-e .``: pip reads the extra from the installed metadata, nothing is
    reinstalled)."""
    hint = f"pip install '{PACKAGE}[{extra}]' (in a clone: pip install -e '.[{extra}]')"
    if extra in EXTRAS_WITH_TORCH:
        # Plain `pip install torch` on Linux is the CUDA build: gigabytes a CPU machine cannot use.
        hint += f"; without a GPU, install torch's CPU build first: {TORCH_CPU_FIRST}"
    return hint


EXTRAS_WITH_TORCH = ("solutions", "notebooks", "tune", "dev")


def missing_extra_message(exc: ModuleNotFoundError) -> str | None:
    """One line for an import of an optional part that is not installed; None for anything else
    (a missing module the table does not know is a real bug, and keeps its traceback)."""
    top = (exc.name or "").split(".")[0]
    distribution, extra = PROVIDED_BY.get(top, ("", ""))
    if not extra:
        return None
    return f"{distribution} is not installed; it comes with the kit's '{extra}' extra: {install_hint(extra)}"
