"""What ``tpugraphs rank`` reads: a program, whatever file held it, and the refusal of one it cannot use.

Each kind's adapter (``solutions.kinds``) builds a ``Program`` from the file forms it knows.
"""

from __future__ import annotations

import typing
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from competition.data.graphs import Graph

if typing.TYPE_CHECKING:
    from solutions.kinds import Kind
    from solutions.kinds.layout_space import LayoutSpace


class RankError(Exception):
    """A program, candidate file or model folder that ``rank`` cannot use; the message names it."""


@dataclass
class Program:
    """A program to rank: its graph (configs may be none), its default config and what the file held."""

    path: Path
    graph: Graph
    default: np.ndarray | None  # the default run's config: (nc, 18) layout, (24,) tile
    form: str  # what the file holds: "npz" or the proto's top-level message
    kernel: str | None = None  # the kernel's name, for a TuningData
    space: LayoutSpace | None = None  # a layout program's layout space
    warnings: list[str] = field(default_factory=list)  # what the answer must say of the file, a line each

    @property
    def kind(self) -> Kind:
        from solutions.kinds import kind_of

        return kind_of(self.graph.task)

    def describe(self) -> str:
        """One line on what was read: the file's form and the graph's size."""
        where = f"kernel {self.kernel} of a TuningData" if self.kernel else \
            ("a released-format npz" if self.form == "npz" else f"{_article(self.form)} {self.form}")
        return f"{where}: {self.graph.num_nodes:,} nodes{self.kind.nodes_note(self)}"

    def configs_shape(self) -> str:
        return f"(configs, {', '.join(str(s) for s in self.graph.configs.shape[1:])})"

    def reference(self) -> np.ndarray | None:
        """The config every other is compared with: the default run's, else the program's own layouts."""
        if self.default is not None:
            return self.default
        return None if self.space is None else self.space.reference()

    def reference_text(self) -> str:
        if self.default is not None:
            return "the program's default config (its proto's default run)"
        if self.space is not None:
            return ("the program's own layouts (as its module records them: XLA's default unless set) in "
                    "the slots the dataset sets")
        return "each tensor's most common setting among the candidates (the program carries no default)"


def _article(word: str) -> str:
    return "an" if word[:1] in "AEHIOU" else "a"


def modal_setting(configs: np.ndarray) -> np.ndarray:
    """``(units, width)``: each unit's most common row among ``configs`` ``(c, units, width)``."""
    out = np.empty(configs.shape[1:], dtype=configs.dtype)
    for j in range(configs.shape[1]):
        settings, counts = np.unique(configs[:, j], axis=0, return_counts=True)
        out[j] = settings[int(np.argmax(counts))]
    return out
