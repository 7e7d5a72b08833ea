"""What ``tpugraphs rank`` does differently for layout programs and tile kernels: one object per task
kind (``RANK_KINDS``, found by ``kind_of(task)``), each built around its ``competition.tasks`` task.

A kind reads its programs (an npz, a tuning proto, a plain module), checks candidate configs, draws
samples, picks the reference and says what a config changes against it, in the program's words.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from competition.data.graphs import Graph
from competition.tasks import LAYOUT, TILE, Task
from solutions.layout_sampling import sample_layout_configs
from solutions.layout_space import SLOTS, TENSORS, LayoutSpace, space_of_graph, space_of_module

TILE_TENSORS = ("kernel", "output", "input")  # config_feat: 8 columns each, the first 6 bounds, sum, product
TILE_BLOCK = 8


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

    @property
    def kind(self) -> _Kind:
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


class _Kind:
    """What ``rank`` does differently for one task kind (an entry of ``RANK_KINDS``)."""

    task: Task
    collection: str  # the default --collection
    noun: str  # "layout program", "tile kernel"
    candidate_options: str  # how to give candidates to a program without measured configs

    def from_tuning(self, path: Path, tuning: dict, kernel: str | None) -> Program:
        raise NotImplementedError

    def from_module(self, path: Path, module: dict, message: str) -> Program:
        raise NotImplementedError

    def from_graph(self, path: Path, graph: Graph) -> Program:
        return Program(path, graph, None, "npz")

    def nodes_note(self, program: Program) -> str:
        return ""

    def problem(self, values: np.ndarray, program: Program) -> str | None:
        """Why the candidate configs ``values`` (float64, the program's config shape) are refused, or None."""
        raise NotImplementedError

    def changes(self, config: np.ndarray, reference: np.ndarray, program: Program) -> list[dict]:
        """What ``config`` changes against ``reference``, each with a ``text`` in the program's words."""
        raise NotImplementedError

    def modal(self, configs: np.ndarray) -> np.ndarray:
        """The most common setting of each unit among ``configs``: the reference when there is no other."""
        raise NotImplementedError

    def sample_menus(self, configs: np.ndarray, count: int, seed: int) -> np.ndarray:
        raise RankError(self.sample_refusal)

    def sample_space(self, program: Program, count: int, seed: int) -> np.ndarray:
        raise RankError(self.sample_refusal)

    sample_refusal: str = ""  # why --sample cannot draw configs of this kind ("": it can)


class _LayoutKind(_Kind):
    task = LAYOUT
    collection = "layout:xla:random"  # the search whose configs spread most, like a sample's
    noun = "layout program"
    candidate_options = "--sample N (drawn from its layout space) or --configs FILE"

    def from_tuning(self, path: Path, tuning: dict, kernel: str | None) -> Program:
        from competition.data.protos.layout import default_layout, featurize_layout

        graph = featurize_layout(tuning)
        return Program(path, graph, default_layout(tuning), "ModuleTuningData",
                       space=space_of_module(tuning["module"], graph.node_config_ids))

    def from_module(self, path: Path, module: dict, message: str) -> Program:
        from competition.data.protos.layout import module_layout_graph

        graph = module_layout_graph(module, where=message)
        return Program(path, graph, None, message, space=space_of_module(module, graph.node_config_ids))

    def from_graph(self, path: Path, graph: Graph) -> Program:
        return Program(path, graph, None, "npz", space=space_of_graph(graph))

    def nodes_note(self, program: Program) -> str:
        rule = "its config_index_to_node" if program.form == "ModuleTuningData" else \
            "its convolutions, dots and reshapes" if program.form != "npz" else "its node_config_ids"
        return f", {program.graph.num_configurable_nodes:,} configurable nodes ({rule})"

    def problem(self, values: np.ndarray, program: Program) -> str | None:
        assert program.space is not None
        return program.space.problem(values)

    def changes(self, config: np.ndarray, reference: np.ndarray, program: Program) -> list[dict]:
        """Per configurable node and tensor, the layout that differs from ``reference``."""
        assert program.space is not None
        units = (len(config), len(TENSORS), SLOTS)
        new, old = config.reshape(units), reference.reshape(units)
        return [program.space.change(int(j), int(t), _dims(old[j, t]), _dims(new[j, t]))
                for j, t in zip(*np.nonzero((new != old).any(axis=2)), strict=True)]

    def modal(self, configs: np.ndarray) -> np.ndarray:
        return _modal_setting(configs)

    def sample_menus(self, configs: np.ndarray, count: int, seed: int) -> np.ndarray:
        return sample_layout_configs(configs, count, seed=seed)

    def sample_space(self, program: Program, count: int, seed: int) -> np.ndarray:
        assert program.space is not None
        return program.space.sample(count, seed=seed)


class _TileKind(_Kind):
    task = TILE
    collection = "tile:xla"
    noun = "tile kernel"
    candidate_options = "--configs FILE (an npz of the released format or a .npy of shape (configs, 24))"
    sample_refusal = ("--sample draws layout configs only: a tile kernel's configs are the tile sizes the "
                      "TPU compiler's search lists for that kernel, a list the dataset does not describe and "
                      "no public rule reproduces; rank the kernel's measured configs or give --configs FILE")

    def from_tuning(self, path: Path, tuning: dict, kernel: str | None) -> Program:
        from competition.data.protos.tile import tile_kernels

        kernels, skipped = tile_kernels(tuning, path.stem)
        names = [k.name for k in kernels]
        listed = ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")
        if not kernels:
            raise RankError(f"{path}: a TuningData with no kernel to rank ({len(skipped)} left out by the "
                            "featurizer's rules; tpugraphs featurize -v says why)")
        if kernel is None and len(kernels) > 1:
            raise RankError(f"{path}: a TuningData of {len(kernels)} tile kernels; pick one with --kernel "
                            f"NAME ({listed})")
        chosen = kernels[0] if kernel is None else next((k for k in kernels if k.name == kernel), None)
        if chosen is None:
            raise RankError(f"{path}: no kernel named {kernel!r}; its kernels: {listed}")
        return Program(path, chosen.graph, chosen.default, "TuningData", kernel=chosen.name)

    def from_module(self, path: Path, module: dict, message: str) -> Program:
        from competition.data.protos.tile import module_tile_graph

        return Program(path, module_tile_graph(module, where=message), None, message)

    def problem(self, values: np.ndarray, program: Program) -> str | None:
        bad = ~np.isfinite(values) | (values < 0) | (values != np.round(values))
        if not bad.any():
            return None
        c, column = (int(i) for i in np.argwhere(bad)[0])
        tensor = TILE_TENSORS[column // TILE_BLOCK]
        return (f"config {c}, column {column} ({tensor}) holds {values[c, column]:g}; tile values are tile "
                "bounds and their sums and products: whole numbers >= 0")

    def changes(self, config: np.ndarray, reference: np.ndarray, program: Program) -> list[dict]:
        """Per tensor, the tile bounds (the first 6; 0: no such dimension) that differ from ``reference``."""
        units = (len(TILE_TENSORS), TILE_BLOCK)
        new, old = config.reshape(units), reference.reshape(units)
        out = []
        for t in np.flatnonzero((new != old).any(axis=1)):
            before, after = _bounds(old[t]), _bounds(new[t])
            text = f"{TILE_TENSORS[t]} tile {_tile_words(after)} instead of {_tile_words(before)}"
            out.append({"tensor": TILE_TENSORS[t], "from": before, "to": after, "text": text})
        return out

    def modal(self, configs: np.ndarray) -> np.ndarray:
        return _modal_setting(configs[:, None, :])[0]


def _dims(values: np.ndarray) -> list[int]:
    return [int(v) for v in values if v >= 0]


def _bounds(block: np.ndarray) -> list[int]:
    values = [int(v) for v in block[:SLOTS]]
    while values and values[-1] == 0:
        values.pop()
    return values


def _tile_words(bounds: list[int]) -> str:
    return "x".join(str(b) for b in bounds) if bounds else "unset"


def _modal_setting(configs: np.ndarray) -> np.ndarray:
    """``(units, width)``: each unit's most common row among ``configs`` ``(c, units, width)``."""
    out = np.empty(configs.shape[1:], dtype=configs.dtype)
    for j in range(configs.shape[1]):
        settings, counts = np.unique(configs[:, j], axis=0, return_counts=True)
        out[j] = settings[int(np.argmax(counts))]
    return out


#: One object per task kind rank handles; a kind missing here is refused by name.
RANK_KINDS: tuple[_Kind, ...] = (_LayoutKind(), _TileKind())


def kind_of(task: Task) -> _Kind:
    found = next((kind for kind in RANK_KINDS if kind.task is task), None)
    if found is None:
        raise RankError(f"rank does not rank {task.name} graphs (it ranks: "
                        f"{', '.join(kind.task.name for kind in RANK_KINDS)})")
    return found
