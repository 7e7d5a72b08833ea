"""What the commands share to check their arguments: argparse types (``type=``) and input files; each
refuses a bad value with one line.

Standard library only (the CLI's rule: building the parser imports nothing heavy). Used by the kit's
commands and by the optional parts' commands (``solutions.rank.command``).
"""

from __future__ import annotations

import argparse
import math
import os
from pathlib import Path


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value}")
    return value


def non_negative_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {value}")
    return value


def open_fraction(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number between 0 and 1, got {text!r}") from None
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"expected a number strictly between 0 and 1, got {value}")
    return value


def finite_number(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"expected a finite number, got {text!r}")
    return value


SUBMISSION_FILE = "a submission CSV file (ID,TopConfigs)"
SOLUTION_FILE = "a solution CSV file (ID,Runtimes,Normalizers,Usage), e.g. OUT/private/solution.csv"


def require_file(path: str | os.PathLike, expected: str, *, suffix: str = ".csv") -> Path:
    """``path`` when it is a file; else a UsageError that says what it is instead (absent, or a folder
    and the ``suffix`` files it holds) and what was ``expected``."""
    from competition.errors import UsageError

    path = Path(path)
    if path.is_file():
        return path
    if path.is_dir():
        inside = sorted(p.name for p in path.glob(f"*{suffix}"))
        holds = f" (it holds {', '.join(inside[:5])}{', ...' if len(inside) > 5 else ''})" if inside else ""
        raise UsageError(f"{path}: a folder, not a file; expected {expected}{holds}")
    raise UsageError(f"{path}: no such file; expected {expected}")
