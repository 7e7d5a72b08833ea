"""Rank the configurations of one's own XLA program with a saved model (``tpugraphs rank``).

``read_program(path)`` reads a program: a released-format npz (a layout program or a tile kernel), a
``ModuleTuningData`` proto (layout; its measured runs optional), a ``TuningData`` proto (tile kernels:
one is picked), or a plain HLO module (``HloProto`` as XLA's ``--xla_dump_hlo_as_proto`` writes it, or an
``HloModuleProto``), whose configurable nodes are found by the dataset's rule
(``competition.data.protos.layout.configurable_nodes``). A layout program carries its layout space
(``solutions.kinds.layout_space``): what each configurable node's tensors may take, their shapes and names.

``candidates`` gathers what to rank: the program's measured configs, a checked file of them, or ``--sample
N`` (drawn from the layout space, or from the menus of the configs at hand); sampled candidates always
include the reference (the program's default run, else its own layouts). ``rank_program`` scores them
with the model a ``tpugraphs solve`` run saved (gbdt or gnn; a seed ensemble blended as ``solve`` blends
it) and returns a ``solutions.rank.report.Ranking``, best first.

The ranking of a program's configs is exactly what ``solve --predict-only`` writes for the same graph
(``tests/test_rank.py`` checks it on the real upstream protos): the same loader
(``solutions.solve.runner.load_models``), the same ``predict`` and the same blend
(``solutions.solve.runner.blend_rankings``). What differs between layout programs and tile kernels lives in
``solutions.kinds``, one adapter per task kind.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from competition.collections import COLLECTIONS, Collection, get_collection
from competition.data.graphs import load_graph
from competition.errors import DataFormatError
from competition.tasks import Task
from solutions.kinds import Kind, KindError
from solutions.kinds import kind_of as adapter_of
from solutions.kinds.program import Program, RankError
from solutions.methods.registry import get_method
from solutions.rank.report import RankedConfig, Ranking
from solutions.solve import runner
from solutions.solve.checks import SolveError
from solutions.store import model_store

__all__ = ["Program", "RankError", "candidates", "choose_collection", "load_models", "rank_program",
           "read_configs", "read_program"]


# -- reading -----------------------------------------------------------------------------------------


def kind_of(task: Task) -> Kind:
    """The adapter of ``task``; a kind without one is a ``RankError`` naming the kinds rank reads."""
    try:
        return adapter_of(task)
    except KindError as exc:
        raise RankError(f"rank does not rank {task.name} graphs ({exc})") from None


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
        program = kind_of(graph.task).from_graph(path, graph)
    else:
        try:
            message, decoded = read_proto(path)
            owner = message_task(message)
            if owner is None:  # a plain module: the task the model is for
                program = kind_of(task or LAYOUT).from_module(path, decoded, message)
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


def read_configs(path: str | Path, program: Program) -> np.ndarray:
    """Candidate configurations for ``program`` from a file: an npz's config tensor (a graph of the released
    format, of the same task) or a ``.npy`` array of the graph's config shape with configs first; every
    candidate is checked against the program (``Kind.problem``). Raises ``RankError`` naming the file,
    the config and, for a layout, the node by its instruction name, the tensor and the rule broken."""
    path, graph = Path(path), program.graph
    key = graph.task.config_key
    shape = graph.configs.shape[1:]
    wanted = program.configs_shape()
    what = f"a {graph.task.name} npz of the released format (its {key!r}) or a .npy of shape {wanted}"
    if not path.is_file():
        raise RankError(f"{path}: {'a folder' if path.is_dir() else 'no such file'}; expected {what}")
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
    if len(configs) == 0:
        raise RankError(f"{path}: holds no configs")
    if configs.dtype.kind not in "iuf":
        raise RankError(f"{path}: configs of dtype {configs.dtype}; expected numbers")
    values = np.asarray(configs, dtype=np.float64)
    problem = program.kind.problem(values, program)
    if problem is not None:
        raise RankError(f"{path}: {problem}")
    return values.astype(np.float32)


# -- candidates --------------------------------------------------------------------------------------


def candidates(program: Program, *, configs_file: str | Path | None = None, sample: int | None = None,
               seed: int = 0) -> tuple[np.ndarray | None, str, bool]:
    """What to rank: ``(configs, where they come from, whether the reference row was added first)``.

    Default: the program's measured configs (``None``: ``rank_program`` reads them and their runtimes).
    ``configs_file``: checked configs. ``sample``: that many distinct configs, drawn from the menus of the
    configs at hand (the file's, else the program's measured ones), or from the program's layout space
    when it has none; the reference (the default run, else the program's own layouts) is added in front
    when the draw does not hold it.
    """
    kind = program.kind
    given = None if configs_file is None else read_configs(configs_file, program)
    if not sample:
        if given is not None:
            return given, f"from {configs_file}", False
        return None, "the program's measured configs", False
    menus = given if given is not None else program.graph.configs
    if len(menus):
        drawn = kind.sample_menus(menus, sample, seed)
        held = f"the configs in {configs_file}" if given is not None else "its measured configs"
        source = f"sampled from the settings of {held}, seed {seed}"
    else:
        drawn = kind.sample_space(program, sample, seed)
        source = f"sampled from the program's layout space, seed {seed}"
    if len(drawn) < sample:  # a small space: say so, rather than leave the user counting
        source += f" (only {len(drawn):,} distinct configs there)"
    reference = program.reference()
    if reference is None or _find(drawn, reference) is not None:
        return drawn, source, False
    return np.concatenate([reference[None].astype(np.float32), drawn]), source + ", the reference added", True


def _find(configs: np.ndarray, config: np.ndarray) -> int | None:
    same = np.flatnonzero((configs.reshape(len(configs), -1) == config.reshape(1, -1)).all(axis=1))
    return int(same[0]) if same.size else None


# -- the model ---------------------------------------------------------------------------------------


def choose_collection(model_dir: str | Path, program: Program, requested: str | None = None) -> tuple[
        Collection, str]:
    """Whose model ranks ``program``, and why (``""`` for the kind's default or a requested one).

    Without ``requested``: the kind's default collection (``layout:xla:random``, ``tile:xla``) when the
    folder holds a model of it; else the folder's only model of the program's kind; else, of several, the
    one whose collection the program's path names (``.../layout/xla/default/...``). A requested
    collection of the other kind is refused.
    """
    kind = program.kind
    if requested is not None:
        chosen = get_collection(requested)
        if chosen.task is not program.graph.task:
            raise RankError(f"--collection {chosen.name} ranks {kind_of(chosen.task).noun}s; {program.path} "
                            f"is a {kind.noun} (its collections: {', '.join(_collections_of(program))})")
        return chosen, ""
    default = get_collection(kind.collection)
    try:
        saved = model_store.read_manifest(Path(model_dir)).get("collections")
    except (model_store.ModelStoreError, OSError):
        saved = None  # load_models says what is wrong with the folder
    if not isinstance(saved, dict) or default.name in saved:
        return default, ""
    mine = [name for name in saved if name in _collections_of(program)]
    if len(mine) == 1:
        return get_collection(mine[0]), f"the only {kind.noun} model in {model_dir}"
    named = [name for name in mine if "/".join(name.split(":")) in program.path.resolve().as_posix()]
    if len(named) == 1:
        return get_collection(named[0]), "the collection the program's path names"
    if mine:
        raise RankError(f"{model_dir}: models of {', '.join(mine)} but not of {default.name}; pick one with "
                        "--collection NAME")
    return default, ""  # load_models says what the folder holds


def _collections_of(program: Program) -> list[str]:
    return [c.name for c in COLLECTIONS if c.task is program.graph.task]


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


def rank_program(program: Program, model_dir: str | Path, *, collection: str | None = None,
                 configs: np.ndarray | None = None, candidate_source: str = "", top: int = 10,
                 reference_added: bool = False) -> Ranking:
    """Score ``configs`` (default: the program's own) with the saved model and rank them, best first.

    ``collection`` defaults to ``choose_collection``'s pick. ``reference_added``: candidate 0 is the
    reference, put there by ``candidates`` (it is said so).
    """
    kind = program.kind
    chosen, why = choose_collection(model_dir, program, collection)
    graph = program.graph
    measured = configs is None
    if configs is None:
        configs = graph.configs
        candidate_source = candidate_source or "the program's measured configs"
    if len(configs) == 0:
        raise RankError(f"{program.path}: the program has no measured configs to rank; give candidates with "
                        f"{kind.candidate_options} (docs/rank.md)")
    candidates_graph = graph.with_configs(configs)
    method, models = load_models(model_dir, chosen)
    predictions = [np.asarray(m.predict(chosen, candidates_graph), dtype=np.float64) for m in models]
    for values in predictions:
        if values.shape != (len(configs),) or not np.isfinite(values).all():
            raise RankError(f"the {method} model returned unusable scores for {program.path} "
                            f"(shape {values.shape}, finite: {bool(np.isfinite(values).all())})")
    # Every candidate, ties by index: the task's submission row (row_from_predictions) is the head of it.
    rankings = [np.argsort(values, kind="stable") for values in predictions]
    order = runner.blend_rankings(chosen, rankings, len(configs))
    kept = candidates_graph.configs
    reference, reference_text = program.reference(), program.reference_text()
    if reference is None:  # a tile kernel without a default run
        reference = kind.modal(kept)
    reference_index = 0 if reference_added else _find(kept, reference)
    place = np.zeros(len(configs), dtype=np.int64)  # predicted place, 0: not ranked (a tile ensemble's tail)
    place[order] = np.arange(1, len(order) + 1)
    truth = _measured_target(graph) if measured else None
    measured_place = None if truth is None else _places(truth)
    ranked = [RankedConfig(rank=i + 1, index=int(c),
                           score=float(predictions[0][c]) if len(models) == 1 else None,
                           config=kept[c], changes=kind.changes(kept[c], reference, program),
                           measured_rank=None if measured_place is None else int(measured_place[c]))
              for i, c in enumerate(order[:top])]
    tau = None
    if truth is not None and len(order) == len(configs):
        from competition.metrics.layout import kendall_tau_score

        tau = float(kendall_tau_score(order, truth))
    return Ranking(program=program, candidates=len(configs), candidate_source=candidate_source,
                   reference=reference_text, order=order, top=ranked,
                   model={"method": method, "collection": chosen.name, "dir": str(model_dir),
                          "models": len(models), "chosen_because": why or None},
                   reference_candidate=reference_index,
                   reference_rank=None if reference_index is None or not place[reference_index]
                   else int(place[reference_index]),
                   reference_added=reference_added, measured_tau=tau)


def _measured_target(graph) -> np.ndarray | None:
    """The measured quantity the task ranks, per config, when every config was measured; else None."""
    if graph.num_configs < 2 or (graph.config_runtime <= 0).any():
        return None
    return np.asarray(graph.ranking_target(), dtype=np.float64)


def _places(values: np.ndarray) -> np.ndarray:
    """(c,) 1 = fastest; ties share the better place."""
    order = np.argsort(values, kind="stable")
    sorted_values = values[order]
    first = np.searchsorted(sorted_values, sorted_values, side="left")
    out = np.empty(len(values), dtype=np.int64)
    out[order] = first + 1
    return out
