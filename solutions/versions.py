"""Versions of a computation that differs by task (the engineered features, the heuristic's rule).

Each version records which task's computation it changed and how, so a model saved by an older version
loads when its own task's computation is unchanged (a tile model outlives a layout-only change) and a
refusal can name what changed.
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
    tasks: tuple[str, ...]

    def same_since(self, task: str | None) -> int:
        """The first version whose ``task`` computation this code still computes (``current`` for a task
        it does not know, or None: then only this very version)."""
        if task not in self.tasks:
            return self.current
        return max((v for v, (changed, _) in self.changes.items() if changed == task), default=1)

    def computes_the_same(self, task: str | None, version: object) -> bool:
        """Whether ``task``'s computation saved as ``version`` is what this code computes."""
        return is_whole_version(version) and self.same_since(task) <= version <= self.current

    def changes_since(self, task: str | None, version: object) -> list[tuple[int, str, str]]:
        """(version, task, what) of each change to ``task`` (to any task when None) after ``version``,
        oldest first; none when ``version`` is not a whole number."""
        if not is_whole_version(version):
            return []
        return [(v, changed, what) for v, (changed, what) in sorted(self.changes.items())
                if v > version and task in (None, changed)]
