"""Rank the configurations of one's own XLA program with a saved model (``tpugraphs rank``).

``read_program(path)`` reads a program: a released-format npz (a layout program or a tile kernel), a
``ModuleTuningData`` proto (layout; its measured runs optional), a ``TuningData`` proto (tile kernels:
one is picked), or a plain HLO module (``HloProto`` as XLA's ``--xla_dump_hlo_as_proto`` writes it, or an
``HloModuleProto``), whose configurable nodes are found by the dataset's rule
(``competition.data.protos.layout.configurable_nodes``). ``rank_program`` takes candidate
configurations (the program's measured ones, a file of them, or ``solutions.layout_sampling``), scores them
with the model a ``tpugraphs solve`` run saved (gbdt or gnn; a seed ensemble blended as ``solve`` blends
it) and returns them best first, each with what it changes against the reference: the proto's default
run when it has one, else each node's (layout) or tensor's (tile) most common setting among the
candidates.

The ranking of a program's configs is exactly what ``solve --predict-only`` writes for the same graph
(``tests/test_rank.py`` checks it on the real upstream protos): the same loader
(``solutions.runner.load_models``), the same ``predict`` and the same blend
(``solutions.runner.blend_rankings``). What differs between layout programs and tile kernels lives in
``KINDS``, keyed by task name.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from competition.collections import Collection, get_collection
from competition.data.graphs import Graph, load_graph
from competition.data.hlo import OPCODE_NAMES
from competition.errors import DataFormatError
from competition.tasks import Task
from solutions import model_store, runner
from solutions.layout_sampling import SLOTS, TENSORS, sample_layout_configs
from solutions.method import get_method
from solutions.run_checks import SolveError

TILE_TENSORS = ("kernel", "output", "input")  # config_feat: 8 columns each, the first 6 bounds, sum, product
TILE_BLOCK = 8


class RankError(Exception):
    """A program, candidate file or model folder that ``rank`` cannot use; the message names it."""


@dataclass
class Program:
    """A program to rank: its graph (configs may be none), the reference config and what the file held."""

    path: Path
    graph: Graph
    default: np.ndarray | None  # the default run's config: (nc, 18) layout, (24,) tile
    form: str  # what the file holds: "npz" or the proto's top-level message
    kernel: str | None = None  # the kernel's name, for a TuningData

    @property
    def kind(self) -> _Kind:
        return kind_of(self.graph.task)

    def describe(self) -> str:
        """One line on what was read: the file's form and the graph's size."""
        where = f"kernel {self.kernel} of a TuningData" if self.kernel else \
            ("a released-format npz" if self.form == "npz" else f"{_article(self.form)} {self.form}")
        return f"{where}: {self.graph.num_nodes:,} nodes{self.kind.nodes_note(self)}"


def _article(word: str) -> str:
    return "an" if word[:1] in "AEHIOU" else "a"


# -- what differs between the kinds -----------------------------------------------------------------


class _Kind:
    """What ``rank`` does differently for one task kind (an entry of ``KINDS``)."""

    collection: str  # the default --collection
    noun: str  # "layout program", "tile kernel"
    sample_refusal: str = ""  # why --sample cannot draw configs of this kind ("": it can)

    def from_tuning(self, path: Path, tuning: dict, kernel: str | None) -> Program:
        raise NotImplementedError

    def from_module(self, module: dict, where: str) -> Graph:
        raise NotImplementedError

    def nodes_note(self, program: Program) -> str:
        return ""

    def bad_value(self, values: np.ndarray) -> tuple[tuple[int, ...], str] | None:
        """The first config value out of the kind's range (its index and the rule), or None."""
        raise NotImplementedError

    def units(self, configs: np.ndarray) -> np.ndarray:
        """``(c, units, tensors, width)``: each config as the settings ``changes`` compares one by one."""
        raise NotImplementedError

    def changes(self, config: np.ndarray, reference: np.ndarray, graph: Graph) -> list[dict]:
        raise NotImplementedError

    def change_text(self, change: dict) -> str:
        raise NotImplementedError

    def sample(self, configs: np.ndarray, count: int, seed: int) -> np.ndarray:
        raise RankError(self.sample_refusal)


def _dims(values: np.ndarray) -> list[int]:
    return [int(v) for v in values if v >= 0]


class _LayoutKind(_Kind):
    collection = "layout:xla:random"  # the search whose configs spread most, like a sample's
    noun = "layout program"

    def from_tuning(self, path: Path, tuning: dict, kernel: str | None) -> Program:
        from competition.data.protos.layout import default_layout, featurize_layout

        return Program(path, featurize_layout(tuning), default_layout(tuning), "ModuleTuningData")

    def from_module(self, module: dict, where: str) -> Graph:
        from competition.data.protos.layout import module_layout_graph

        return module_layout_graph(module, where=where)

    def nodes_note(self, program: Program) -> str:
        rule = "its config_index_to_node" if program.form == "ModuleTuningData" else \
            "its convolutions, dots and reshapes" if program.form != "npz" else "its node_config_ids"
        return f", {program.graph.num_configurable_nodes:,} configurable nodes ({rule})"

    def bad_value(self, values: np.ndarray) -> tuple[tuple[int, ...], str] | None:
        bad = ~np.isin(values, np.arange(-1, SLOTS))
        if not bad.any():
            return None
        rule = f"layout values are dimension numbers 0-{SLOTS - 1} or -1 (unset)"
        return tuple(int(i) for i in np.argwhere(bad)[0]), rule

    def units(self, configs: np.ndarray) -> np.ndarray:
        return configs.reshape(len(configs), configs.shape[1], len(TENSORS), SLOTS)

    def changes(self, config: np.ndarray, reference: np.ndarray, graph: Graph) -> list[dict]:
        """Per configurable node and tensor, the layout dims that differ from ``reference``."""
        out = []
        new, old = self.units(config[None])[0], self.units(reference[None])[0]
        for j, t in zip(*np.nonzero((new != old).any(axis=2)), strict=True):
            node = int(graph.node_config_ids[j])
            out.append({"node": node, "opcode": OPCODE_NAMES.get(int(graph.node_opcode[node]), "other"),
                        "tensor": TENSORS[t], "from": _dims(old[j, t]), "to": _dims(new[j, t])})
        return out

    def change_text(self, change: dict) -> str:
        return (f"node {change['node']} ({change['opcode']}) {change['tensor']} "
                f"{change['from']}->{change['to']}")

    def sample(self, configs: np.ndarray, count: int, seed: int) -> np.ndarray:
        return sample_layout_configs(configs, count, seed=seed)


class _TileKind(_Kind):
    collection = "tile:xla"
    noun = "tile kernel"
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

    def from_module(self, module: dict, where: str) -> Graph:
        from competition.data.protos.tile import module_tile_graph

        return module_tile_graph(module, where=where)

    def bad_value(self, values: np.ndarray) -> tuple[tuple[int, ...], str] | None:
        bad = ~np.isfinite(values) | (values < 0) | (values != np.round(values))
        if not bad.any():
            return None
        rule = "tile values are tile bounds and their sums and products: whole numbers >= 0"
        return tuple(int(i) for i in np.argwhere(bad)[0]), rule

    def units(self, configs: np.ndarray) -> np.ndarray:
        return configs.reshape(len(configs), len(TILE_TENSORS), 1, TILE_BLOCK)

    def changes(self, config: np.ndarray, reference: np.ndarray, graph: Graph) -> list[dict]:
        """Per tensor, the tile bounds (the first 6; 0: no such dimension) that differ from ``reference``."""
        new, old = self.units(config[None])[0, :, 0], self.units(reference[None])[0, :, 0]
        return [{"tensor": TILE_TENSORS[t], "from": _bounds(old[t]), "to": _bounds(new[t])}
                for t in np.flatnonzero((new != old).any(axis=1))]

    def change_text(self, change: dict) -> str:
        return f"{change['tensor']} bounds {change['from']}->{change['to']}"


def _bounds(block: np.ndarray) -> list[int]:
    values = [int(v) for v in block[:SLOTS]]
    while values and values[-1] == 0:
        values.pop()
    return values


#: task name -> what rank does for that kind; a kind missing here is refused by name.
KINDS: dict[str, _Kind] = {"layout": _LayoutKind(), "tile": _TileKind()}


def kind_of(task: Task) -> _Kind:
    try:
        return KINDS[task.name]
    except KeyError:
        raise RankError(f"rank does not rank {task.name} graphs (it ranks: {', '.join(KINDS)})") from None


# -- reading -----------------------------------------------------------------------------------------


def read_program(path: str | Path, *, task: Task | None = None, kernel: str | None = None) -> Program:
    """A released-format npz, a tuning proto (``ModuleTuningData``; ``TuningData``: ``kernel`` picks one of
    its kernels when it holds several) or a plain HLO module, read as a program of ``task`` (default:
    layout; an npz or a tuning proto has its own task)."""
    from competition.data.protos.featurize import ProtoFormatError, message_task, read_proto, wire_error
    from competition.data.protos.wire import WireFormatError
    from competition.tasks import LAYOUT

    path = Path(path)
    if not path.is_file():
        raise RankError(f"{path}: {'a folder; expected a file' if path.is_dir() else 'no such file'}")
    if path.suffix == ".npz":
        try:
            graph = load_graph(path)
        except (DataFormatError, ValueError, OSError) as exc:
            raise RankError(f"{path}: not a graph of the released format: {exc}") from None
        program = Program(path, graph, None, "npz")
    else:
        try:
            message, decoded = read_proto(path)
            owner = message_task(message)
            if owner is None:  # a plain module: the task the model is for
                chosen = task or LAYOUT
                program = Program(path, kind_of(chosen).from_module(decoded, message), None, message)
            else:
                program = kind_of(owner).from_tuning(path, decoded, kernel)
        except ProtoFormatError as exc:  # bytes that are not protobuf: say what was expected
            raise RankError(f"{exc}" + (f" ({_EXPECTED})" if exc.offset is not None else "")) from None
        except WireFormatError as exc:  # runs are decoded lazily, so their bytes are checked here
            raise RankError(str(wire_error(path, exc))) from None
        except ValueError as exc:
            raise RankError(f"{path}: {exc}") from None
    if kernel is not None and program.kernel is None:
        raise RankError(f"{path}: --kernel picks a kernel of a TuningData; this file holds one "
                        f"{program.kind.noun}")
    return program


_EXPECTED = ("expected a released-format npz, a ModuleTuningData or TuningData proto, or a plain HLO "
             "module: an HloProto as --xla_dump_hlo_as_proto writes it, or an HloModuleProto")


def _configs_shape(graph: Graph) -> str:
    return f"(configs, {', '.join(str(s) for s in graph.configs.shape[1:])})"


def read_configs(path: str | Path, graph: Graph) -> np.ndarray:
    """Candidate configurations for ``graph`` from a file: an npz's config tensor (a graph of the released
    format, of the same task) or a ``.npy`` array of the graph's config shape with configs first."""
    path = Path(path)
    key = graph.task.config_key
    shape = graph.configs.shape[1:]
    wanted = _configs_shape(graph)
    what = f"a {graph.task.name} npz of the released format (its {key!r}) or a .npy of shape {wanted}"
    if not path.is_file():
        raise RankError(f"{path}: no such file")
    try:
        if path.suffix == ".npz":
            with np.load(path, allow_pickle=False) as npz:
                if key not in npz.files:
                    raise RankError(f"{path}: no {key!r} array (expected {what})")
                configs = npz[key]
        else:
            configs = np.load(path, allow_pickle=False)
    except (OSError, ValueError) as exc:
        raise RankError(f"{path}: unreadable ({exc}); expected {what}") from None
    if configs.ndim != 1 + len(shape) or configs.shape[1:] != shape:
        nodes = f"the program has {graph.num_configurable_nodes} configurable nodes, so " \
            if graph.num_configurable_nodes is not None else ""
        raise RankError(f"{path}: configs of shape {configs.shape}; {nodes}expected {wanted}")
    values = np.asarray(configs, dtype=np.float64)
    bad = kind_of(graph.task).bad_value(values)
    if bad is not None:
        index, rule = bad
        names = ("config", "node", "column") if len(index) == 3 else ("config", "column")
        where = ", ".join(f"{name} {i}" for name, i in zip(names, index, strict=True))
        raise RankError(f"{path}: {where} holds {values[index]:g}; {rule}")
    if len(configs) == 0:
        raise RankError(f"{path}: holds no configs")
    return configs.astype(np.float32)


# -- sampling ---------------------------------------------------------------------------------------


def sample_configs(program: Program, configs: np.ndarray, count: int, *, seed: int = 0) -> np.ndarray:
    """``count`` configs of ``program``'s kind drawn from the menus ``configs`` show (layout only)."""
    if len(configs) == 0:
        raise RankError(f"{program.path}: --sample draws from the settings the program's measured configs "
                        "take, and it has none; give --configs FILE to draw from the settings its configs "
                        "take")
    return program.kind.sample(configs, count, seed)


# -- the model ---------------------------------------------------------------------------------------


def load_models(model_dir: str | Path, collection: Collection) -> tuple[str, list]:
    """The method name and the model(s) ``tpugraphs solve`` saved for ``collection`` in ``model_dir``."""
    model_dir = Path(model_dir)
    train = f"'tpugraphs solve --method gbdt --collection {collection.name} ...'"
    try:
        manifest = model_store.read_manifest(model_dir) if model_dir.is_dir() else {}
        method, saved = manifest.get("method"), manifest.get("collections")
        if not method:
            raise RankError(f"{model_dir}: no saved models here ({model_store.MANIFEST} is missing); "
                            f"train with {train} and pass its --model-dir "
                            "(default: SUB.models next to --out)")
        if isinstance(saved, dict) and collection.name not in saved:
            raise RankError(f"{model_dir}: no model of {collection.name} here (its runs cover: "
                            f"{', '.join(saved) or 'none'}); "
                            f"train one with 'tpugraphs solve --method {method} "
                            f"--collection {collection.name} --model-dir {model_dir} ...'")
        folder = model_store.check_saved_run(model_dir, method, [collection.name])[collection.name]
        models = runner.load_models(get_method(method), folder, seed=0, device="cpu",
                                   retrain="retrain with 'tpugraphs solve'")
    except (model_store.ModelStoreError, SolveError) as exc:
        raise RankError(str(exc)) from None
    return method, [model for _, model in models]


# -- ranking -----------------------------------------------------------------------------------------


@dataclass
class RankedConfig:
    rank: int  # 1 = predicted fastest
    index: int  # position among the candidates
    score: float | None  # the model's score (lower = faster); None for a seed ensemble (blended ranks)
    config: np.ndarray  # one config: (nc, 18) layout, (24,) tile
    changes: list[dict]  # what differs from the reference, per node and tensor (layout) or per tensor (tile)


@dataclass
class Ranking:
    program: Program
    model: dict
    candidates: int
    candidate_source: str
    reference: str
    order: np.ndarray  # candidate indices, predicted fastest first (every candidate; 5 for a tile ensemble)
    top: list[RankedConfig] = field(default_factory=list)

    def to_json_dict(self) -> dict:
        graph = self.program.graph
        return {
            "program": str(self.program.path),
            "task": graph.task.name,
            "format": self.program.form,
            "kernel": self.program.kernel,
            "configurable_nodes": None if graph.num_configurable_nodes is None
            else graph.node_config_ids.astype(int).tolist(),
            "model": self.model,
            "candidates": self.candidates,
            "candidate_source": self.candidate_source,
            "reference": self.reference,
            "top": [{
                "rank": r.rank, "candidate": r.index, "predicted_score": r.score,
                # None: the kit's models are trained with ranking losses; their scores order configs
                # but are not runtimes, so no relative runtime is claimed (docs/rank.md).
                "predicted_relative_runtime": None,
                "config": r.config.astype(int).tolist(), "changes": r.changes,
            } for r in self.top],
        }

    def format(self) -> str:
        models = f"{self.model['models']} model{'s' if self.model['models'] > 1 else ''}"
        lines = [f"{self.program.path}: {self.program.describe()}",
                 f"{self.candidates:,} candidate configs ({self.candidate_source}), ranked by the "
                 f"{self.model['method']} model of {self.model['collection']} "
                 f"({models}, {self.model['dir']})",
                 f"changes are against {self.reference}",
                 f"{'rank':>4s} {'candidate':>9s} {'score':>10s}  changes"]
        for r in self.top:
            score = "-" if r.score is None else f"{r.score:.4f}"
            lines.append(f"{r.rank:4d} {r.index:9d} {score:>10s}  {self._changes_text(r.changes)}")
        if len(self.order) < self.candidates:
            lines.append(f"a seed ensemble of {self.model['collection']} blends each model's top "
                         f"{len(self.order)}, as solve does: only those are ranked")
        lines.append("scores order configs (lower = predicted faster); they are not runtimes. "
                     "docs/rank.md says what the ranking is worth.")
        return "\n".join(lines)

    def _changes_text(self, changes: list[dict], limit: int = 3) -> str:
        if not changes:
            return "none (the reference)"
        shown = [self.program.kind.change_text(c) for c in changes[:limit]]
        more = f" and {len(changes) - limit} more" if len(changes) > limit else ""
        return "; ".join(shown) + more


def rank_program(program: Program, model_dir: str | Path, *, collection: str | None = None,
                 configs: np.ndarray | None = None, candidate_source: str = "", top: int = 10) -> Ranking:
    """Score ``configs`` (default: the program's own) with the saved model and rank them, best first.

    ``collection`` defaults to the program kind's (``layout:xla:random``, ``tile:xla``).
    """
    kind = program.kind
    chosen = get_collection(collection or kind.collection)
    graph = program.graph
    if chosen.task is not graph.task:
        raise RankError(f"--collection {chosen.name} ranks {kind_of(chosen.task).noun}s; {program.path} is a "
                        f"{kind.noun} (its collection: {kind.collection})")
    if configs is None:
        configs = graph.configs
        candidate_source = candidate_source or "the program's measured configs"
    if len(configs) == 0:
        more = "" if kind.sample_refusal else "; with it, --sample N draws more from their menus"
        raise RankError(f"{program.path}: the program has no measured configs to rank; give candidates with "
                        f"--configs FILE (an npz of the released format or a .npy of shape "
                        f"{_configs_shape(graph)}){more}")
    candidates = graph.with_configs(configs)
    method, models = load_models(model_dir, chosen)
    predictions = [np.asarray(m.predict(chosen, candidates), dtype=np.float64) for m in models]
    for values in predictions:
        if values.shape != (len(configs),) or not np.isfinite(values).all():
            raise RankError(f"the {method} model returned unusable scores for {program.path} "
                            f"(shape {values.shape}, finite: {bool(np.isfinite(values).all())})")
    # Every candidate, ties by index: the task's submission row (row_from_predictions) is the head of it.
    rankings = [np.argsort(values, kind="stable") for values in predictions]
    order = runner.blend_rankings(chosen, rankings, len(configs))
    kept = candidates.configs
    if program.default is not None:
        reference, reference_text = program.default, "the program's default config (its proto's default run)"
    else:
        reference = _modal_setting(kind.units(kept)).reshape(kept.shape[1:])
        part = "node" if graph.num_configurable_nodes is not None else "tensor"
        reference_text = (f"each {part}'s most common setting among the candidates (the program carries "
                          "no default)")
    ranked = [RankedConfig(rank=i + 1, index=int(c),
                           score=float(predictions[0][c]) if len(models) == 1 else None,
                           config=kept[c], changes=kind.changes(kept[c], reference, graph))
              for i, c in enumerate(order[:top])]
    return Ranking(program=program, candidates=len(configs), candidate_source=candidate_source,
                   reference=reference_text, order=order, top=ranked,
                   model={"method": method, "collection": chosen.name, "dir": str(model_dir),
                          "models": len(models)})


def _modal_setting(units: np.ndarray) -> np.ndarray:
    """``(units, tensors, width)``: each unit's most common setting among ``units`` ``(c, units, ...)``."""
    out = np.empty(units.shape[1:], dtype=units.dtype)
    for j in range(units.shape[1]):
        settings, counts = np.unique(units[:, j].reshape(len(units), -1), axis=0, return_counts=True)
        out[j] = settings[int(np.argmax(counts))].reshape(units.shape[2:])
    return out
