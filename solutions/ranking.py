"""Rank the layout configurations of one's own XLA program with a saved model (``tpugraphs rank``).

``rank_program(program, model_dir)`` reads a program (a ``ModuleTuningData`` proto, with or without its
measured runs, or a layout npz of the released format), takes candidate configurations (the
program's measured ones, a file of them, or ``sample_layout_configs``), scores them with the model a
``tpugraphs solve`` run saved (gbdt or gnn; a seed ensemble blended as ``solve`` blends it) and
returns them best first, each with what it changes against the reference layout: the proto's default
run when it has one, else each configurable node's most common setting among the candidates.

The ranking of a program's configs is exactly what ``solve --predict-only`` writes for the same graph
(``tests/test_rank.py`` checks it on the real upstream proto): the same loader, the same ``predict``
and the same blend (``solutions.runner.blend_rankings``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from competition.collections import Collection, get_collection
from competition.data.graphs import LayoutGraph, load_graph
from competition.data.hlo import OPCODE_IDS
from competition.errors import DataFormatError
from competition.predictions import ranking_from_predictions
from solutions import model_store, runner
from solutions.method import get_method
from solutions.run_checks import SolveError

SLOTS = 6  # layout dims per tensor in node_config_feat (output, input, kernel: 3 x 6 = 18 columns)
TENSORS = ("output", "input", "kernel")
OPCODE_NAMES = {number: name for name, number in OPCODE_IDS.items()}  # 0: an opcode newer than the table


class RankError(Exception):
    """A program, candidate file or model folder that ``rank`` cannot use; the message names it."""


@dataclass
class Program:
    """A layout program: its graph (configs may be none) and the reference setting of its nodes."""

    path: Path
    graph: LayoutGraph
    default: np.ndarray | None  # (nc, 18) the default run's setting, when the proto has one


def read_program(path: str | Path) -> Program:
    """A layout npz of the released format, or a ``ModuleTuningData`` proto (runs optional)."""
    from competition.data.protos.featurize import featurize_proto, read_tuning_proto
    from competition.data.protos.layout import default_layout

    path = Path(path)
    if not path.is_file():
        raise RankError(f"{path}: no such file")
    if path.suffix == ".npz":
        try:
            graph = load_graph(path)
        except (DataFormatError, ValueError, OSError) as exc:
            raise RankError(f"{path}: not a graph of the released format: {exc}") from None
        if not isinstance(graph, LayoutGraph):
            raise RankError(f"{path}: a tile graph; rank takes a layout program (tile kernels are not supported)")
        return Program(path, graph, None)
    try:
        featurized = featurize_proto(path)
        kind, tuning = read_tuning_proto(path)
    except DataFormatError as exc:
        raise RankError(f"{exc} (rank takes a ModuleTuningData proto: the HLO module with its "
                        "config_index_to_node, as the dataset's layout .pb files hold it, or a layout npz)") from None
    if not kind.config_per_node:
        raise RankError(f"{path}: a TuningData of tile kernels; rank takes a layout program "
                        "(tile kernels are not supported)")
    (_, graph), = featurized.graphs
    return Program(path, graph, default_layout(tuning))


def read_configs(path: str | Path, configurable_nodes: int) -> np.ndarray:
    """Candidate configurations from a file: ``(c, nc, 18)``, from an npz's ``node_config_feat`` (a
    graph of the released format) or a ``.npy`` array."""
    path = Path(path)
    if not path.is_file():
        raise RankError(f"{path}: no such file")
    try:
        if path.suffix == ".npz":
            with np.load(path, allow_pickle=False) as npz:
                if "node_config_feat" not in npz.files:
                    raise RankError(f"{path}: no 'node_config_feat' array (expected a layout npz of the released "
                                    "format, or a .npy of shape (configs, nodes, 18))")
                configs = npz["node_config_feat"]
        else:
            configs = np.load(path, allow_pickle=False)
    except (OSError, ValueError) as exc:
        raise RankError(f"{path}: unreadable ({exc}); expected a layout npz or a .npy array") from None
    expected = (configurable_nodes, 3 * SLOTS)
    if configs.ndim != 3 or configs.shape[1:] != expected:
        raise RankError(f"{path}: configs of shape {configs.shape}; the program has {configurable_nodes} "
                        f"configurable nodes, so expected (configs, {expected[0]}, {expected[1]})")
    values = np.asarray(configs, dtype=np.float64)
    bad = ~np.isin(values, np.arange(-1, SLOTS))
    if bad.any():
        c, n, k = (int(i) for i in np.argwhere(bad)[0])
        raise RankError(f"{path}: config {c}, node {n}, column {k} holds {values[c, n, k]:g}; layout values "
                        f"are dimension numbers 0-{SLOTS - 1} or -1 (unset)")
    if len(configs) == 0:
        raise RankError(f"{path}: holds no configs")
    return configs.astype(np.float32)


def layout_groups(configs: np.ndarray) -> np.ndarray:
    """``(nc,)`` group of each configurable node: nodes whose settings are identical in every config
    are tied (the dataset's layout groups), so a sampled config keeps them equal."""
    columns = np.ascontiguousarray(configs.transpose(1, 0, 2).reshape(configs.shape[1], -1))
    _, group = np.unique(columns, axis=0, return_inverse=True)
    return group.reshape(-1)


def _minor_swap(setting: np.ndarray) -> np.ndarray:
    """The setting with the two minor-most dims of each set tensor swapped (the compiler's local move)."""
    out = setting.copy()
    for t in range(len(TENSORS)):
        block = out[t * SLOTS:(t + 1) * SLOTS]
        if block[0] >= 0 and block[1] >= 0:
            block[0], block[1] = block[1], block[0]
    return out


def sample_layout_configs(configs: np.ndarray, count: int, *, seed: int = 0) -> np.ndarray:
    """``count`` distinct configurations (fewer when the space is smaller) drawn the way the random
    search draws them: every layout group picks one setting of its menu.

    A group's menu is the settings its nodes take in ``configs`` (the program's measured or given
    configs) plus, for each, the two minor-most dims swapped; so only the slots the dataset sets are
    set, and tied nodes stay tied. Shapes: ``configs`` (c, nc, 18) -> (count', nc, 18).
    """
    if count < 1:
        raise ValueError(f"count must be >= 1, got {count}")
    rng = np.random.default_rng(seed)
    group = layout_groups(configs)
    leaders = [int(np.flatnonzero(group == g)[0]) for g in range(group.max() + 1)]
    menus = []
    for leader in leaders:
        seen = np.unique(configs[:, leader, :], axis=0)
        moves = np.array([_minor_swap(s) for s in seen])
        menus.append(np.unique(np.concatenate([seen, moves]), axis=0))
    space = float(np.prod([len(m) for m in menus], dtype=np.float64))
    wanted = int(min(count, space))
    chosen: dict[bytes, np.ndarray] = {}
    for _ in range(20 * wanted):
        if len(chosen) == wanted:
            break
        picks = [m[rng.integers(len(m))] for m in menus]
        config = np.stack([picks[g] for g in group]).astype(np.float32)
        chosen.setdefault(config.tobytes(), config)
    return np.stack(list(chosen.values()))


# -- the model ---------------------------------------------------------------------------------------


def load_models(model_dir: str | Path, collection: Collection) -> tuple[str, list]:
    """The method name and the model(s) ``tpugraphs solve`` saved for ``collection`` in ``model_dir``."""
    model_dir = Path(model_dir)
    try:
        method = model_store.read_manifest(model_dir).get("method") if model_dir.is_dir() else None
        if not method:
            raise RankError(f"{model_dir}: no saved models here ({model_store.MANIFEST} is missing); train with "
                            f"'tpugraphs solve --method gbdt --collection {collection.name} ...' and pass its "
                            "--model-dir (default: SUB.models next to --out)")
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
    config: np.ndarray  # (nc, 18)
    changes: list[dict]  # what differs from the reference, per node and tensor


@dataclass
class Ranking:
    program: Path
    model: dict
    candidates: int
    candidate_source: str
    reference: str
    order: np.ndarray  # (c,) every candidate's index, predicted fastest first
    top: list[RankedConfig] = field(default_factory=list)

    def to_json_dict(self) -> dict:
        return {
            "program": str(self.program),
            "model": self.model,
            "candidates": self.candidates,
            "candidate_source": self.candidate_source,
            "reference": self.reference,
            "top": [{
                "rank": r.rank, "candidate": r.index, "predicted_score": r.score,
                # None: the kit's models are trained with ranking losses; their scores order configs
                # but are not runtimes, so no relative runtime is claimed.
                "predicted_relative_runtime": None,
                "config": r.config.astype(int).tolist(), "changes": r.changes,
            } for r in self.top],
        }

    def format(self) -> str:
        lines = [f"{self.program}: {self.candidates:,} candidate configs ({self.candidate_source}), "
                 f"ranked by the {self.model['method']} model of {self.model['collection']} "
                 f"({self.model['models']} model{'s' if self.model['models'] > 1 else ''}, {self.model['dir']})",
                 f"changes are against {self.reference}",
                 f"{'rank':>4s} {'candidate':>9s} {'score':>10s}  changes"]
        for r in self.top:
            score = "-" if r.score is None else f"{r.score:.4f}"
            lines.append(f"{r.rank:4d} {r.index:9d} {score:>10s}  {_changes_text(r.changes)}")
        lines.append("scores order configs (lower = predicted faster); they are not runtimes. "
                     "docs/rank.md says what the ranking is worth.")
        return "\n".join(lines)


def _changes_text(changes: list[dict], limit: int = 3) -> str:
    if not changes:
        return "none (the reference layout)"
    shown = [f"node {c['node']} ({c['opcode']}) {c['tensor']} {c['from']}->{c['to']}" for c in changes[:limit]]
    more = f" and {len(changes) - limit} more" if len(changes) > limit else ""
    return "; ".join(shown) + more


def _dims(values: np.ndarray) -> list[int]:
    return [int(v) for v in values if v >= 0]


def config_changes(config: np.ndarray, reference: np.ndarray, graph: LayoutGraph) -> list[dict]:
    """Per configurable node and tensor, the layout dims that differ from ``reference``."""
    out = []
    for j in np.flatnonzero((config != reference).any(axis=1)):
        node = int(graph.node_config_ids[j])
        for t, tensor in enumerate(TENSORS):
            old, new = reference[j, t * SLOTS:(t + 1) * SLOTS], config[j, t * SLOTS:(t + 1) * SLOTS]
            if (old != new).any():
                out.append({"node": node, "opcode": OPCODE_NAMES.get(int(graph.node_opcode[node]), "other"), "tensor": tensor,
                            "from": _dims(old), "to": _dims(new)})
    return out


def rank_program(program: Program, model_dir: str | Path, *, collection: str = "layout:xla:random",
                 configs: np.ndarray | None = None, candidate_source: str = "", top: int = 10) -> Ranking:
    """Score ``configs`` (default: the program's own) with the saved model and rank them, best first."""
    chosen = get_collection(collection)
    if chosen.task_name != "layout":
        raise RankError(f"--collection {collection}: rank takes a layout collection (tile is not supported)")
    graph = program.graph
    if configs is None:
        configs = graph.node_config_feat
        candidate_source = candidate_source or "the program's measured configs"
    if len(configs) == 0:
        raise RankError(f"{program.path}: the program has no measured configs to rank; give candidates with "
                        "--configs FILE (or a program with measured runs for --sample N)")
    candidates = LayoutGraph(node_feat=graph.node_feat, node_opcode=graph.node_opcode, edge_index=graph.edge_index,
                             config_runtime=np.zeros(len(configs), dtype=np.int64),
                             node_config_feat=np.asarray(configs, dtype=np.float32),
                             node_config_ids=graph.node_config_ids, node_splits=graph.node_splits)
    method, models = load_models(model_dir, chosen)
    predictions = [np.asarray(m.predict(chosen, candidates), dtype=np.float64) for m in models]
    for values in predictions:
        if values.shape != (len(configs),) or not np.isfinite(values).all():
            raise RankError(f"the {method} model returned unusable scores for {program.path} "
                            f"(shape {values.shape}, finite: {bool(np.isfinite(values).all())})")
    order = runner.blend_rankings(chosen, [ranking_from_predictions(chosen, v) for v in predictions], len(configs))
    if program.default is not None:
        reference, reference_text = program.default, "the program's default layout (its proto's default run)"
    else:
        reference = _modal_setting(candidates.node_config_feat)
        reference_text = "each node's most common setting among the candidates (the program carries no default)"
    ranked = [RankedConfig(rank=i + 1, index=int(c), score=float(predictions[0][c]) if len(models) == 1 else None,
                           config=candidates.node_config_feat[c],
                           changes=config_changes(candidates.node_config_feat[c], reference, graph))
              for i, c in enumerate(order[:top])]
    return Ranking(program=program.path, candidates=len(configs), candidate_source=candidate_source,
                   reference=reference_text, order=order, top=ranked,
                   model={"method": method, "collection": chosen.name, "dir": str(model_dir), "models": len(models)})


def _modal_setting(configs: np.ndarray) -> np.ndarray:
    out = np.empty(configs.shape[1:], dtype=configs.dtype)
    for j in range(configs.shape[1]):
        settings, counts = np.unique(configs[:, j, :], axis=0, return_counts=True)
        out[j] = settings[int(np.argmax(counts))]
    return out
