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

from collections.abc import Sequence
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
from solutions.rank.scoring import ModelFolder, Scorer
from solutions.solve import runner
from solutions.solve.checks import SolveError
from solutions.store import model_store

__all__ = ["DumpChoice", "Program", "RankError", "agreement", "candidates", "choose_collection",
           "load_folders", "load_models", "module_of_folder", "rank_program", "read_configs", "read_program"]


# -- reading -----------------------------------------------------------------------------------------


def kind_of(task: Task) -> Kind:
    """The adapter of ``task``; a kind without one is a ``RankError`` naming the kinds rank reads."""
    try:
        return adapter_of(task)
    except KindError as exc:
        raise RankError(f"rank does not rank {task.name} graphs ({exc})") from None


class DumpChoice(RankError):
    """A dump folder given as PROGRAM without a module picked: the message says which to pick and
    ``listing`` lists the folder's modules."""

    def __init__(self, message: str, listing: list[str]) -> None:
        super().__init__(message)
        self.listing = listing


def module_of_folder(folder: Path, module: str | None) -> Path:
    """The before-optimizations module of dump folder ``folder`` named ``module`` (its module name, e.g.
    ``jit_loss``, its file name, or its ``module_NNNN`` number). Without a name, or with one that fits
    none or several, ``DumpChoice`` lists the folder's modules (largest first) and says which to pick."""
    from competition.data.protos.dump import BEFORE, dump_modules

    found = dump_modules(folder)
    if not found:
        raise RankError(f"{folder}: a folder without *{BEFORE} files; give a dump folder XLA wrote "
                        "(XLA_FLAGS='--xla_dump_to=DIR --xla_dump_hlo_as_proto') or one module file")
    if module is not None:
        fits = [m for m in found if module in (m.name, m.file_name, m.file_name.split(".")[0])]
        if len(fits) == 1:
            return fits[0].path
    listing = [f"{'instructions':>12s} {'configurable':>12s}  module (file)"] + [
        f"{m.instructions:12,d} {m.configurable:12,d}  {m.name} ({m.file_name})"
        + (f": unreadable, {m.problem}" if m.problem else "") for m in found]
    usable = [m for m in found if m.configurable]
    hint = f"the largest with layouts to set: --module {usable[0].name}" if usable else \
        "none has a convolution, dot or reshape to lay out"
    if module is None:
        message = f"{folder}: a dump folder of {len(found)} modules; pick one with --module NAME ({hint})"
    elif not fits:
        message = f"{folder}: no module named {module!r} among its {len(found)} modules ({hint})"
    else:
        message = (f"{folder}: {len(fits)} modules are named {module!r}; pick one by its file's module_NNNN "
                   f"number, e.g. --module {fits[0].file_name.split('.')[0]}")
    raise DumpChoice(message, listing)


def read_program(path: str | Path, *, task: Task | None = None, kernel: str | None = None,
                 module: str | None = None) -> Program:
    """A released-format npz, a tuning proto (``ModuleTuningData``; ``TuningData``: ``kernel`` picks one of
    its kernels when it holds several) or a plain HLO module, read as a program of ``task`` (default:
    layout; an npz or a tuning proto has its own task). ``path`` may be an XLA dump folder: ``module``
    picks its module (``module_of_folder``). A plain module after XLA's optimizations (fused, scheduled,
    or named so) is refused for a layout program, naming the before-optimizations file to rank instead.
    """
    from competition.data.protos.dump import before_optimizations_file, optimized_evidence
    from competition.data.protos.featurize import ProtoFormatError, message_task, read_proto, wire_error
    from competition.data.protos.wire import WireFormatError
    from competition.tasks import LAYOUT

    path = Path(path)
    if path.is_dir():
        path = module_of_folder(path, module)
    elif module is not None:
        raise RankError(f"{path}: --module picks a module of a dump folder; this is one file")
    if not path.is_file():
        raise RankError(f"{path}: no such file")
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
                target = task or LAYOUT
                evidence, certain = optimized_evidence(path, decoded) if target is LAYOUT else (None, False)
                advice = (f"the layout models learned modules before fusion: rank "
                          f"{before_optimizations_file(path)} instead")
                if evidence and certain:
                    raise RankError(f"{path}: a module after XLA's optimizations ({evidence}); {advice}")
                program = kind_of(target).from_module(path, decoded, message)
                if evidence:
                    program.warnings.append(f"{path.name} may be a module after XLA's optimizations "
                                            f"({evidence}); {advice}")
            else:
                program = kind_of(owner).from_tuning(path, decoded, kernel)
        except ProtoFormatError as exc:  # bytes that are not protobuf: say what was expected
            if exc.offset is not None and exc.offset < _NOT_A_PROTO_WITHIN:
                raise RankError(f"{path}: not a released-format npz, a tuning proto or an HLO module (its "
                                f"bytes do not decode as a protocol buffer: {exc.problem}); "
                                f"{_EXPECTED}") from None
            raise RankError(f"{exc}" + (f" ({_EXPECTED})" if exc.offset is not None else "")) from None
        except WireFormatError as exc:  # runs are decoded lazily, so their bytes are checked here
            raise RankError(str(wire_error(path, exc))) from None
        except ValueError as exc:
            raise RankError(f"{path}: {exc}") from None
    if kernel is not None and program.kernel is None:
        raise RankError(f"{path}: --kernel picks a kernel of a TuningData; this file holds one "
                        f"{program.kind.noun}")
    return program


# A decoding error this close to the start: the file is some other kind of file, not a damaged proto.
_NOT_A_PROTO_WITHIN = 64
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


def load_folders(program: Program, model_dirs: Sequence[str | Path], collection: str | None = None
                 ) -> list[ModelFolder]:
    """Each ``--model`` folder's collection (``choose_collection``) and its model(s) (``load_models``)."""
    folders = []
    for model_dir in model_dirs:
        chosen, why = choose_collection(model_dir, program, collection)
        method, models = load_models(model_dir, chosen)
        folders.append(ModelFolder(Path(model_dir), chosen, why, method, models))
    return folders


def rank_program(program: Program, model_dir: str | Path | Sequence[str | Path], *,
                 collection: str | None = None, configs: np.ndarray | None = None,
                 candidate_source: str = "", top: int = 10, reference_added: bool = False) -> Ranking:
    """Score ``configs`` (default: the program's own) with the saved model(s) and rank them, best first.

    ``model_dir``: one folder, or several (``--model`` given more than once): their blend ranks the
    candidates (``solutions.rank.scoring``) and ``Ranking.agreement`` says how far they agree. With one
    folder the order is exactly ``solve --predict-only``'s (a seed ensemble blended as ``solve`` blends
    it). ``collection`` defaults to ``choose_collection``'s pick, per folder. ``reference_added``:
    candidate 0 is the reference, put there by ``candidates`` (it is said so).
    """
    kind = program.kind
    dirs = [model_dir] if isinstance(model_dir, str | Path) else list(model_dir)
    graph = program.graph
    measured = configs is None
    if configs is None:
        configs = graph.configs
        candidate_source = candidate_source or "the program's measured configs"
    if len(configs) == 0:
        raise RankError(f"{program.path}: the program has no measured configs to rank; give candidates with "
                        f"{kind.candidate_options} (docs/rank.md)")
    folders = load_folders(program, dirs, collection)
    kept = graph.with_configs(configs).configs
    scorer = Scorer(program, folders, kept)
    orders = [_folder_order(folder, values, len(configs)) for folder, values in zip(folders, scorer.raw,
                                                                                     strict=True)]
    blended = scorer.blend()
    order = orders[0] if len(folders) == 1 else np.argsort(blended, kind="stable")
    reference, reference_text = program.reference(), program.reference_text()
    if reference is None:  # a tile kernel without a default run
        reference = kind.modal(kept)
    reference_index = 0 if reference_added else _find(kept, reference)
    place = _place_of(order, len(configs))
    truth = _measured_target(graph) if measured else None
    measured_place = None if truth is None else _places(truth)
    shown = scorer.single or len(folders) > 1  # a single folder's seed ensemble ranks by blended ranks
    ranked = [RankedConfig(rank=i + 1, index=int(c), score=float(blended[c]) if shown else None,
                           config=kept[c], changes=kind.changes(kept[c], reference, program),
                           measured_rank=None if measured_place is None else int(measured_place[c]))
              for i, c in enumerate(order[:top])]
    tau = None
    if truth is not None and len(order) == len(configs):
        from competition.metrics.layout import kendall_tau_score

        tau = float(kendall_tau_score(order, truth))
    reference_score = None if reference_index is None else float(blended[reference_index])
    return Ranking(program=program, candidates=len(configs), candidate_source=candidate_source,
                   reference=reference_text, order=order, top=ranked,
                   model=folders[0].describe(), models=[f.describe() for f in folders],
                   reference_candidate=reference_index,
                   reference_rank=None if reference_index is None or not place[reference_index]
                   else int(place[reference_index]),
                   reference_added=reference_added, measured_tau=tau, reference_score=reference_score,
                   score_unit=scorer.unit,
                   agreement=None if len(folders) < 2 else agreement(folders, scorer, orders, top,
                                                                     reference_index),
                   scorer=scorer, reference_config=np.asarray(reference, dtype=np.float32))


def _folder_order(folder: ModelFolder, values: np.ndarray, count: int) -> np.ndarray:
    """One folder's order of the candidates: its model's, or its seed ensemble blended as solve does
    (every candidate, ties by index: the task's submission row is the head of it)."""
    rankings = [np.argsort(v, kind="stable") for v in values]
    return runner.blend_rankings(folder.collection, rankings, count)


def _place_of(order: np.ndarray, count: int) -> np.ndarray:
    """(c,) predicted place, 1 = best; 0: not ranked (a tile ensemble's tail)."""
    place = np.zeros(count, dtype=np.int64)
    place[order] = np.arange(1, len(order) + 1)
    return place


#: Below either, the models' answers are said to disagree (docs/rank.md, How sure).
AGREE_TAU, AGREE_OVERLAP = 0.5, 0.5


def agreement(folders: list[ModelFolder], scorer: Scorer, orders: list[np.ndarray], top: int,
              reference_index: int | None) -> dict:
    """How far several folders' models agree: Kendall tau between each pair's scores of the candidates,
    the overlap of their top K, where each puts the reference, and a plain sentence."""
    from scipy.stats import kendalltau

    scores = scorer.folder_scores()
    count = len(scorer.candidates)
    k = min(top, count)
    pairs = []
    for a in range(len(folders)):
        for b in range(a + 1, len(folders)):
            tau = float(kendalltau(scores[a], scores[b]).statistic) if count > 1 else 1.0
            common = len(set(orders[a][:k].tolist()) & set(orders[b][:k].tolist()))
            pairs.append({"models": [a, b], "kendall_tau": None if np.isnan(tau) else tau,
                          "top_k": k, "top_k_common": common, "top_k_overlap": common / k})
    places = [_place_of(order, count) for order in orders]
    reference_ranks = [None if reference_index is None or not p[reference_index] else int(p[reference_index])
                       for p in places]
    worst = min(pairs, key=lambda p: (p["kendall_tau"] if p["kendall_tau"] is not None else -1,
                                      p["top_k_overlap"]))
    tau, overlap = worst["kendall_tau"], worst["top_k_overlap"]
    a, b = worst["models"]
    agree = tau is not None and tau >= AGREE_TAU and overlap >= AGREE_OVERLAP
    where = "" if reference_index is None else (
        f"; the {folders[a].method} model puts the reference at {reference_ranks[a]}, the "
        f"{folders[b].method} model at {reference_ranks[b]}")
    tau_text = "undefined" if tau is None else f"{tau:+.2f}"
    if agree:
        sentence = (f"The models agree: Kendall tau {tau_text} between their orders of the {count:,} "
                    f"candidates and {worst['top_k_common']} of their top {k} in common{where}.")
    else:
        sentence = (f"The models disagree: Kendall tau {tau_text} between the {folders[a].method} and "
                    f"{folders[b].method} models' orders of the {count:,} candidates and only "
                    f"{worst['top_k_common']} of their top {k} in common{where}. Treat the ranking as "
                    "uncertain: time the best candidates of each model before trusting one.")
    return {"pairs": pairs, "reference_ranks": reference_ranks, "agree": agree, "sentence": sentence,
            "thresholds": {"kendall_tau": AGREE_TAU, "top_k_overlap": AGREE_OVERLAP}}


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
