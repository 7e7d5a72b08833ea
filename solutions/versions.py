"""Versions of a computation that differs by task (the engineered features, the heuristic's rule).

A saved model records the version it was computed with; this code loads only its own version and
refuses any other, naming what changed since for the saved model's task (``changes_since``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass


def is_whole_version(version: object) -> bool:
    """A saved version is a whole number (a bool, string or float is not one)."""
    return isinstance(version, int) and not isinstance(version, bool)


@dataclass(frozen=True)
class VersionLog:
    """``current``: this code's version; ``changes``: version -> (the task it changed, what changed)."""

    current: int
    changes: Mapping[int, tuple[str, str]]

    def is_current(self, version: object) -> bool:
        """Whether a saved ``version`` is this code's (only then does a saved model load)."""
        return is_whole_version(version) and version == self.current

    def changes_since(self, task: str | None, version: object) -> list[tuple[int, str, str]]:
        """(version, task, what) of each change to ``task`` (to any task when None) after ``version``,
        oldest first; none when ``version`` is not a whole number."""
        if not is_whole_version(version):
            return []
        return [(v, changed, what) for v, (changed, what) in sorted(self.changes.items())
                if v > version and task in (None, changed)]
