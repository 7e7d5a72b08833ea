"""Beside the official baselines (``make bench-peers``): the upstream TpuGraphs baselines and the kit's
methods on the same data, on the same cores, one at a time, scored by the kit's own scorer.

The peers are the dataset authors' programs (google-research-datasets/tpu_graphs, TensorFlow + TF-GNN),
read from ``../shared/peers/tpu_graphs`` and never copied into the kit: ``tiles_train.py`` for
``tile:xla`` and ``layout_train.py`` for each layout collection. They run in their own virtual
environment (``.venv-peers/``, pinned by ``benchmarks/peers-requirements.txt``, built on first use; the
kit's ``.venv`` is untouched) through ``benchmarks/peers_launch.py``, which limits TensorFlow to the
benchmark's threads, times the upstream inference loop, and repairs the one upstream call that crashes
at the pinned commit (its docstring says which and how).

**The upstream's recipe** (``--recipe``): ``documented`` (the default) runs the commands of the
upstream README, ``layout_train.py --epochs 10 --max_configs 1000`` for each layout collection and
``tiles_train.py --model=EarlyJoinSAGE`` at its published flag defaults (100 epochs, 10 configs per
kernel, batches of 10 kernels) for the tiles; ``defaults`` leaves every flag at its default (layout: 50
epochs, every config kept). ``--peer-epochs`` changes the epochs only, and every table names the recipe,
its flags and any epochs changed. Each peer's validation curve (its own sampled validation OPA after
every epoch, and when each epoch ended) is kept and tabulated.

**Several runs**: every method, the upstream included, runs once per ``--run-seeds`` seed (default
0,1,2): the upstream seeded through the launcher (``PEERS_SEED``: the upstream sets no seed of its own),
the kit's methods by ``tpugraphs solve --seed``. A cell's score is the mean of its runs, shown with the
run-to-run spread (lowest and highest run, standard deviation) beside the 95 % interval over graphs
of the run-averaged per-graph scores (``competition.stats``, ``tpugraphs report``'s default method).
The gnn is read against the upstream per collection by both: the paired interval over graphs of gnn -
upstream (``tpugraphs compare``'s) and the runs' spread (``verdict``).

**The embedded ``small`` competition** (``tpugraphs synth``, one per ``--seeds`` seed, under ``--out``):
each peer trains on the released npz tree the competition reproduces. Its test partition holds the test
graphs and, under a ``valid__`` prefix, the valid graphs, so the one trained model ranks both: the test
rows are scored against the hidden labels, the valid rows give a validation score (the kit's per-graph
metric). The kit's random, heuristic, gbdt and gnn run at their defaults. ``--scale tiny`` is refused
with the upstream (``upstream_data_problem``: too few kernels for one tile batch, no layout graph of 16
configs); it serves the kit's side (``--no-peers``).

**The tiles, per kernel** (``tile_reading``): the tile metric reads the best of five picks and has no
lower bound, so one kernel where the five picks are all slow can sink a mean. Per method: the median and
mean over test kernels, the share of kernels scored above a random top 5's exact expectation
(``random_tile_expectation``), and the mean by configs per kernel (< 40, 40-150, > 150).

**Equal budgets** (``--equal-budget COLLECTIONS``): the gnn given the upstream's training time on each
of these collections (its epochs raised, ``--time-budget`` ending the training), and the upstream
stopped at the gnn's (from its curve's timestamps: the epochs it had finished by then).

**The real graphs at hand** (``make bench-real``'s within-graph protocol, ``benchmarks.bench_real``):
each labelled real graph's configs are split 60 / 20 / 20 into train / valid / test by the same seeded
draws as ``bench_real``; the kit's methods (``tpugraphs solve``) and the peers train on the same train
parts (valid for their selection) and rank the same test parts, written with their runtimes zeroed.
There the upstream runs as many epochs as make it sample as many configs as the training part holds
(``matched_epochs``; one layout epoch samples 16 configs of each training graph), every config kept.

Measured per run, each in its own process: train and predict wall time and the process's peak resident
memory (its ``VmHWM``, ``run_measured``). Train: the whole run less its prediction (for a peer:
TensorFlow start, loading, training with its per-epoch validation and checkpoints; less the upstream
inference loop over the test and valid graphs); predict: the inference over the test graphs alone (for a
peer, the items of its inference loop that are test graphs; for the kit, ``solve``'s test prediction).

A finished run is kept under ``--out`` (``measured.json`` beside its outputs) and reused while its
settings are unchanged; ``--fresh`` reruns everything. Results: ``--out``/results.json and Markdown
tables on stdout (BENCHMARKS.md, "Beside the official baselines").
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from competition.collections import COLLECTION_BY_NAME, COLLECTIONS, Collection, parse_row_id
from competition.data.tree import split_dir

REPO = Path(__file__).resolve().parents[1]
PEERS_DIR = REPO.parent / "shared" / "peers" / "tpu_graphs"
PEERS_VENV = REPO / ".venv-peers"
REQUIREMENTS = Path(__file__).with_name("peers-requirements.txt")
LAUNCHER = Path(__file__).with_name("peers_launch.py")
DEFAULT_OUT = REPO / "data" / "peers-bench"
KIT_METHODS = ("random", "heuristic", "gbdt", "gnn")
UPSTREAM = "upstream"
VALID_PREFIX = "valid__"  # the valid graphs' names in a peer's test partition
# The upstream programs' own defaults at the pinned commit (``--epochs`` of tiles_train / layout_train).
PUBLISHED_EPOCHS = {"tile": 100, "layout": 50}
PROGRAMS = {"tile": "tiles_train.py", "layout": "layout_train.py"}
INFERENCE_LOOPS = {"tile": "Generating Predictions", "layout": "Inference"}  # their progress bars
SHORT = {"tile:xla": "tile", "layout:xla:default": "xla:def", "layout:xla:random": "xla:rnd",
         "layout:nlp:default": "nlp:def", "layout:nlp:random": "nlp:rnd"}


class BenchError(Exception):
    """A run cannot go on; the message says why, for the person at the keyboard."""


# -- the peers and their environment ---------------------------------------------------------------


def peers_missing(peers_dir: Path = PEERS_DIR) -> str | None:
    """Why the upstream baselines cannot run here (None when their programs are at hand)."""
    if not peers_dir.is_dir():
        return f"the upstream baselines are not at {peers_dir} (../shared/peers is not part of a clone)"
    missing = [p for p in PROGRAMS.values() if not (peers_dir / p).is_file()]
    if missing:
        return f"{peers_dir} lacks {', '.join(missing)}"
    return None


def peers_python(venv: Path = PEERS_VENV) -> Path:
    return venv / "bin" / "python"


def requirements_digest(requirements: Path = REQUIREMENTS) -> str:
    return hashlib.sha256(requirements.read_bytes()).hexdigest()[:16]


def ensure_peers_env(venv: Path = PEERS_VENV, *, python: str = "python3.11", say=print) -> Path:
    """The peers' interpreter, creating ``venv`` and installing the pinned requirements when needed.

    A stamp holding the requirements' digest marks a finished install, so an interrupted one is redone
    and a changed requirements file reinstalls."""
    stamp = venv / ".installed-peers"
    digest = requirements_digest()
    if stamp.is_file() and stamp.read_text().strip() == digest and peers_python(venv).is_file():
        return peers_python(venv)
    if not peers_python(venv).is_file():
        say(f"creating the peers' environment {venv} ({python})")
        done = subprocess.run([python, "-m", "venv", str(venv)], capture_output=True, text=True)
        if done.returncode != 0:
            raise BenchError(f"cannot create {venv} with {python}: {_last_line(done.stderr)}")
    say(f"installing {REQUIREMENTS.name} into {venv} (TensorFlow 2.15, TF-GNN 1.0.3; a few minutes)")
    pip = [str(peers_python(venv)), "-m", "pip", "install", "--quiet", "-r", str(REQUIREMENTS)]
    done = subprocess.run(pip, capture_output=True, text=True)
    if done.returncode != 0:
        raise BenchError(f"installing {REQUIREMENTS.name} into {venv} failed: {_last_line(done.stderr)}")
    stamp.write_text(digest + "\n")
    return peers_python(venv)


def _last_line(text: str) -> str:
    """The last ``ERROR`` line of a command's output (pip's), else its last line."""
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("ERROR")]
    return (errors or lines or ["(no output)"])[-1]


# -- running one program, measured ---------------------------------------------------------------------


@dataclasses.dataclass
class Measured:
    """One child process: its exit status, wall time and peak resident memory (``peak_source`` says how
    the peak was read)."""

    returncode: int
    wall_s: float
    peak_mb: float
    peak_source: str = "ru_maxrss"


PEAK_SAMPLE_S = 0.2


def _high_water_kb(pid: int) -> int:
    """``VmHWM`` of a live process: the peak resident memory of its own address space since its exec
    (0 once it is gone). Unlike ``getrusage``'s ``ru_maxrss``, it does not count the memory of the
    process it was forked from."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return 0


def run_measured(cmd: Sequence[str], *, cwd: Path, env: dict[str, str], log: Path) -> Measured:
    """Run ``cmd`` with its output in ``log``; its peak memory is its ``VmHWM``, read every
    ``PEAK_SAMPLE_S`` seconds while it runs (high-water marks only rise: what the last reading before its
    exit misses is growth in its last fraction of a second)."""
    log.parent.mkdir(parents=True, exist_ok=True)
    peak_kb = 0
    with open(log, "wb") as out:
        started = time.perf_counter()
        child = subprocess.Popen(list(cmd), cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT)
        while True:
            try:
                returncode = child.wait(timeout=PEAK_SAMPLE_S)
                break
            except subprocess.TimeoutExpired:
                peak_kb = max(peak_kb, _high_water_kb(child.pid))
        wall = time.perf_counter() - started
    return Measured(returncode, wall, peak_kb / 1024, "VmHWM")


def thread_env(threads: int) -> dict[str, str]:
    """The environment of every run: ``threads`` threads for TensorFlow, torch, BLAS and LightGBM."""
    env = dict(os.environ)
    for name in ("TF_NUM_INTRAOP_THREADS", "TF_NUM_INTEROP_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS",
                 "OPENBLAS_NUM_THREADS"):
        env[name] = str(threads)
    env["TF_CPP_MIN_LOG_LEVEL"] = "2"
    env["PYTHONUNBUFFERED"] = "1"
    return env


def failure_reason(log: Path) -> str:
    """The last error-looking line of a failed run's log (its last line otherwise)."""
    text = log.read_text(errors="replace").replace("\r", "\n") if log.is_file() else ""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    for line in reversed(lines):
        if "Error" in line or "error:" in line:
            return line[:300]
    return lines[-1][:300] if lines else "no output"


# -- the peers' CSV to kit rows -----------------------------------------------------------------------


def read_peer_csv(path: Path) -> list[tuple[str, list[int]]]:
    """The rows of an upstream prediction CSV (``ID,TopConfigs``), in file order."""
    rows: list[tuple[str, list[int]]] = []
    with open(path, newline="", encoding="utf-8") as fh:
        reader = csv.reader(fh)
        header = next(reader, None)
        if header != ["ID", "TopConfigs"]:
            raise BenchError(f"{path}: header {header!r}, expected ID,TopConfigs")
        for line_no, fields in enumerate(reader, start=2):
            if not fields:
                continue
            if len(fields) != 2:
                raise BenchError(f"{path}:{line_no}: {len(fields)} fields, expected 2")
            try:
                indices = [int(x) for x in fields[1].split(";") if x.strip()]
            except ValueError:
                raise BenchError(f"{path}:{line_no}: TopConfigs {fields[1][:40]!r} is not ';'-separated "
                                 "integers") from None
            rows.append((fields[0], indices))
    return rows


def peer_row(collection: Collection, indices: Sequence[int], n_configs: int) -> np.ndarray:
    """A kit row from an upstream row: repeats dropped (the tile program pads short rows with 0), then
    as many indices as the collection's row lists (tile: the first 5, all the metric reads), checked by
    the kit's submission rule."""
    from competition.submission.rules import parse_top_configs

    seen: dict[int, None] = {}
    for i in indices:
        seen.setdefault(int(i), None)
    kept = list(seen)
    top_k = collection.task.top_k
    if top_k is not None:
        kept = kept[:top_k]
    return parse_top_configs(";".join(map(str, kept)), collection, n_configs)


def split_peer_rows(rows: Sequence[tuple[str, list[int]]], collection: Collection,
                    sizes: dict[str, int]) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """Test rows (by kit ID) and valid rows (by file stem) of a peer's CSV; ``sizes``: each graph's
    configs, by the stem the peer saw (valid graphs with ``VALID_PREFIX``). Every graph must be there."""
    test: dict[str, np.ndarray] = {}
    valid: dict[str, np.ndarray] = {}
    for row_id, indices in rows:
        found, stem = parse_row_id(row_id)
        if found != collection:
            raise BenchError(f"row {row_id}: collection {found.name}, expected {collection.name}")
        if stem not in sizes:
            raise BenchError(f"row {row_id}: no such graph in the peer's test partition")
        row = peer_row(collection, indices, sizes[stem])
        if stem.startswith(VALID_PREFIX):
            valid[stem[len(VALID_PREFIX):]] = row
        else:
            test[f"{collection.name}:{stem}"] = row
    missing = sorted(set(sizes) - {s for s in (parse_row_id(r)[1] for r, _ in rows)})
    if missing:
        raise BenchError(f"the peer's CSV lacks {len(missing)} graph(s) of {collection.name}, "
                         f"e.g. {missing[0]}")
    return test, valid


def inference_seconds(loops: Sequence[dict], desc: str, stems: Sequence[str]) -> tuple[float, float]:
    """(the whole upstream inference loop, its test graphs' share) in seconds.

    ``loops``: the launcher's timings; ``stems``: the graphs in the order the loop met them (the order
    of the CSV's rows). Item k's time is from its arrival to the next one's (its prediction and the
    next item's loading); the valid graphs' items are left out of the test share."""
    matching = [loop for loop in loops if loop["desc"].startswith(desc)]
    if not matching:
        raise BenchError(f"the peer's run has no {desc!r} loop timed")
    stamps = matching[-1]["stamps"]
    if len(stamps) != len(stems) + 2:
        raise BenchError(f"the {desc!r} loop timed {len(stamps) - 2} items for {len(stems)} rows")
    total = stamps[-1] - stamps[0]
    test = sum(stamps[k + 2] - stamps[k + 1] for k, stem in enumerate(stems)
               if not stem.startswith(VALID_PREFIX))
    return total, test


# -- data trees ---------------------------------------------------------------------------------------


def peers_data_root(tree: Path, task: str) -> Path:
    """The folder an upstream program takes as ``--data_root``: ``.../tile/xla`` or ``.../layout``."""
    collection = next(c for c in COLLECTIONS if c.task.name == task)
    train = split_dir(tree, collection, "train")
    return train.parent if task == "tile" else train.parents[2]


def link_peers_tree(public: Path, root: Path) -> None:
    """A tree for the peers at ``root`` (links to ``public``'s files): train and valid as released, the
    test partition holding the test graphs and the valid graphs (``VALID_PREFIX``)."""
    for collection in COLLECTIONS:
        for split in ("train", "valid", "test"):
            source = split_dir(public, collection, split)
            target = root / "npz" / collection.subpath / split
            target.mkdir(parents=True, exist_ok=True)
            for path in sorted(source.glob("*.npz")):
                _link(path, target / path.name)
                if split == "valid":
                    _link(path, root / "npz" / collection.subpath / "test" / f"{VALID_PREFIX}{path.name}")


def _link(source: Path, link: Path) -> None:
    link.parent.mkdir(parents=True, exist_ok=True)
    if link.is_symlink() or link.exists():
        link.unlink()
    link.symlink_to(source.resolve())


def build_small(seed: int, out: Path, *, scale: str = "small", say=print) -> Path:
    """The embedded competition of ``scale`` and ``seed`` under ``out`` (reused when complete)."""
    folder = out / (f"small-s{seed}" if scale == "small" else f"{scale}-s{seed}")
    if (folder / "private" / "solution.csv").is_file():
        return folder
    say(f"building the {scale} embedded competition, seed {seed}, in {folder}")
    done = subprocess.run([sys.executable, "-m", "competition.cli", "synth", str(folder), "--scale", scale,
                           "--seed", str(seed), "--force"], capture_output=True, text=True, cwd=REPO)
    if done.returncode != 0:
        raise BenchError(f"tpugraphs synth failed: {_last_line(done.stderr or done.stdout)}")
    return folder


# -- the upstream's recipes ------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Recipe:
    """The upstream flags a peer runs with, by task, and the name the tables give them."""

    name: str
    flags: dict[str, tuple[str, ...]]
    source: str  # where the recipe is written down

    def task_flags(self, task: str, epochs: int | None = None) -> list[str]:
        """The flags of ``task``, ``--epochs`` replaced by ``epochs`` when given."""
        kept = [f for f in self.flags[task] if not f.startswith("--epochs=")]
        chosen = epochs if epochs is not None else self.epochs(task)
        return [*kept, f"--epochs={chosen}"]

    def epochs(self, task: str) -> int:
        for flag in self.flags[task]:
            if flag.startswith("--epochs="):
                return int(flag.split("=", 1)[1])
        return PUBLISHED_EPOCHS[task]


RECIPES = {
    # The upstream README's commands: `layout_train.py --source S --search T --epochs 10 --max_configs
    # 1000` for each layout collection, `tiles_train.py --model=EarlyJoinSAGE` (its flag defaults:
    # 100 epochs, 10 configs per kernel, batches of 10 kernels, ListMLE + 0.02 MSE) for the tiles.
    "documented": Recipe("documented", {"tile": ("--model=EarlyJoinSAGE",),
                                        "layout": ("--epochs=10", "--max_configs=1000")},
                         "the upstream README's commands"),
    # Every flag at its default (layout: 50 epochs, every config kept; tile as documented).
    "defaults": Recipe("defaults", {"tile": ("--model=EarlyJoinSAGE",), "layout": ()},
                       "the upstream programs' flag defaults"),
}
# What the upstream programs need of the data (their flag defaults): tiles_train.py drops kernels of
# fewer than --configs 10 configs from training and batches --batch 10 kernels, dropping a short last
# batch; layout_train.py drops train and valid graphs of fewer than --configs 16 configs.
TILE_BATCH, TILE_CONFIGS, LAYOUT_CONFIGS = 10, 10, 16


def describe_recipe(recipe: Recipe, epochs: dict[str, int]) -> str:
    """``documented (tile: --model=EarlyJoinSAGE --epochs=100; layout: --epochs=10 --max_configs=1000)``,
    the epochs lowered by ``--peer-epochs`` named as such."""
    parts = []
    for task in ("tile", "layout"):
        flags = " ".join(recipe.task_flags(task, epochs.get(task)))
        lowered = f", epochs lowered from {recipe.epochs(task)}" if task in epochs and epochs[
            task] != recipe.epochs(task) else ""
        parts.append(f"{task}: `{flags}`{lowered}")
    return f"{recipe.name} ({'; '.join(parts)})"


def upstream_data_problem(public: Path) -> str | None:
    """Why the upstream programs cannot train on the competition ``public`` (None when they can)."""
    problems = [collection_problem(public, c) for c in COLLECTIONS]
    return "; ".join(p for p in problems if p) or None


def collection_problem(tree: Path, collection: Collection) -> str | None:
    """Why the upstream program of ``collection`` cannot train on ``tree`` (None when it can): too few
    training kernels for one tile batch, or no train or valid layout graph of ``LAYOUT_CONFIGS``
    configs (the programs would fail, the tiles with an empty dataset, the layouts with ``KeyError:
    'graph_id'``)."""
    from competition.data.graphs import read_config_count
    from competition.text import plural

    task = collection.task.name
    least = TILE_CONFIGS if task == "tile" else LAYOUT_CONFIGS
    for split in ("train",) if task == "tile" else ("train", "valid"):
        paths = sorted(split_dir(tree, collection, split).glob("*.npz"))
        kept = sum(read_config_count(p) >= least for p in paths)
        if task == "tile" and kept < TILE_BATCH:
            return (f"{kept} training kernel{plural(kept)} with {least}+ configs, fewer than one batch of "
                    f"{TILE_BATCH} (tiles_train.py)")
        if task == "layout" and kept == 0:
            return (f"no {collection.name} {split} graph with {least}+ configs (layout_train.py --configs "
                    f"{least})")
    return None


# -- one run of a peer or of a kit method --------------------------------------------------------------


def _measured(run_dir: Path, settings: dict, fresh: bool, run: Callable[[], Measured]) -> Measured:
    """The run's measurement: reused from ``run_dir/measured.json`` when its settings match (its outputs
    beside it), else ``run()`` in an emptied ``run_dir``. What is read from the outputs is read again
    each time, so a change in that reading needs no rerun."""
    stamp = run_dir / "measured.json"
    if not fresh and stamp.is_file():
        stored = json.loads(stamp.read_text())
        if stored.get("settings") == settings:
            return Measured(**stored["measured"])
    if run_dir.exists():
        shutil.rmtree(run_dir)
    run_dir.mkdir(parents=True)
    measured = run()
    stamp.write_text(json.dumps({"settings": settings, "measured": dataclasses.asdict(measured)}, indent=1))
    return measured


def graph_sizes(tree: Path, collection: Collection, split: str, prefix: str = "") -> dict[str, int]:
    from competition.data.graphs import read_config_count

    paths = sorted(split_dir(tree, collection, split).glob("*.npz"))
    return {prefix + p.stem: read_config_count(p) for p in paths}


def epoch_curve(timings: dict) -> list[dict]:
    """The upstream's per-epoch curve from the launcher's stamps: per epoch, the seconds since the
    program started at its end, its training loss and OPA and its validation loss and OPA (the
    upstream's own sampled validation, which picks its best epoch)."""
    start = timings.get("start", 0.0)
    curve = []
    for k, epoch in enumerate(timings.get("epochs", [])):
        logs = epoch["logs"]
        curve.append({"epoch": k + 1, "elapsed_s": round(epoch["t"] - start, 2),
                      "loss": logs.get("loss"), "opa": logs.get("opa_metric"),
                      "val_loss": logs.get("val_loss"), "val_opa": logs.get("val_opa_metric")})
    return curve


def run_peer(collection: Collection, tree: Path, run_dir: Path, *, flags: Sequence[str], seed: int | None,
             threads: int, fresh: bool, python: Path, say=print) -> dict:
    """Train and run one upstream baseline on ``tree`` (a peers tree: ``link_peers_tree``) with the
    upstream ``flags`` and ``seed`` (``PEERS_SEED``); its test and valid rows, times, peak memory and
    validation curve."""
    task = collection.task.name
    settings = {"peer": PROGRAMS[task], "collection": collection.name, "tree": str(tree),
                "flags": list(flags), "seed": seed, "threads": threads}
    predictions = run_dir / "predictions.csv"
    cmd = [str(python), str(LAUNCHER), str(run_dir / "timings.json"), PROGRAMS[task],
           f"--data_root={peers_data_root(tree, task)}", f"--cache_dir={run_dir / 'cache'}",
           f"--out_dir={run_dir / 'out'}", f"--results_csv={predictions}", *flags]
    if task == "layout":
        cmd += [f"--source={collection.source}", f"--search={collection.search}"]
    env = thread_env(threads)
    if seed is not None:
        env["PEERS_SEED"] = str(seed)
    say(f"  upstream {PROGRAMS[task]:<16} {collection.name:<20} seed {seed} ...", end="", flush=True)
    measured = _measured(run_dir, settings, fresh, lambda: run_measured(
        cmd, cwd=PEERS_DIR, env=env, log=run_dir / "log.txt"))
    result = {"settings": settings, "method": UPSTREAM, "collection": collection.name,
              "wall_s": measured.wall_s, "peak_mb": measured.peak_mb}
    timings_file = run_dir / "timings.json"
    timings = json.loads(timings_file.read_text()) if timings_file.is_file() else {}
    result["curve"] = epoch_curve(timings)
    if measured.returncode != 0 or not predictions.is_file():
        result["failed"] = f"exit {measured.returncode}: {failure_reason(run_dir / 'log.txt')}"
        say(f" failed after {measured.wall_s:.0f} s: {result['failed']}")
        return result
    rows = read_peer_csv(predictions)
    sizes = graph_sizes(tree, collection, "test")
    test, valid = split_peer_rows(rows, collection, sizes)
    total, test_s = inference_seconds(timings["loops"], INFERENCE_LOOPS[task],
                                      [parse_row_id(r)[1] for r, _ in rows])
    result.update(train_s=measured.wall_s - total, predict_s=test_s, inference_s=total,
                  test_rows={k: v.tolist() for k, v in test.items()},
                  valid_rows={k: v.tolist() for k, v in valid.items()})
    say(f" train {result['train_s']:.0f} s, predict {test_s:.0f} s, peak {measured.peak_mb:.0f} MB")
    return result


def run_kit(method: str, data: Path, run_dir: Path, *, seed: int, collections: Sequence[Collection] | None,
            threads: int, fresh: bool, extra: Sequence[str] = (), say=print) -> dict:
    """``tpugraphs solve`` of one kit method on ``data`` (``extra``: more ``solve`` options): its
    submission, per-collection validation scores, fit and predict times and peak memory."""
    settings = {"method": method, "data": str(data), "seed": seed, "threads": threads,
                "collections": [c.name for c in collections] if collections else "all"}
    if extra:
        settings["extra"] = list(extra)
    submission = run_dir / "submission.csv"
    cmd = [sys.executable, "-m", "competition.cli", "solve", "--data", str(data), "--method", method,
           "--seed", str(seed), "--out", str(submission), "--json", str(run_dir / "solve.json"), "--quiet",
           *extra]
    for collection in collections or ():
        cmd += ["--collection", collection.name]
    say(f"  kit {method:<21} {', '.join(c.name for c in collections) if collections else 'all five':<20} "
        f"seed {seed} ...", end="", flush=True)
    measured = _measured(run_dir, settings, fresh, lambda: run_measured(
        cmd, cwd=REPO, env=thread_env(threads), log=run_dir / "log.txt"))
    result = {"settings": settings, "method": method, "wall_s": measured.wall_s, "peak_mb": measured.peak_mb}
    if measured.returncode != 0 or not submission.is_file():
        result["failed"] = f"exit {measured.returncode}: {failure_reason(run_dir / 'log.txt')}"
        say(f" failed: {result['failed']}")
        return result
    report = json.loads((run_dir / "solve.json").read_text())
    result["collections"] = {
        c["collection"]: {"validation_score": c["validation_score"], "train_s": c["fit_seconds"],
                          "predict_s": c["predict_seconds"], "peak_mb": c["peak_memory_mb"]}
        for c in report["collections"]}
    result["submission"] = str(submission)
    say(f" {measured.wall_s:.0f} s, peak {measured.peak_mb:.0f} MB")
    return result


# -- scoring ------------------------------------------------------------------------------------------


def valid_score(collection: Collection, rows: dict[str, Sequence[int]], public: Path) -> float:
    """The mean official score of ``rows`` (by file stem) over the valid graphs of ``public``."""
    from competition.data.graphs import load_graph

    scores = []
    for path in sorted(split_dir(public, collection, "valid").glob("*.npz")):
        graph = load_graph(path, collection.task.name)
        scores.append(collection.task.score_graph(np.asarray(rows[path.stem]), graph.config_runtime.astype(
            np.float64), graph.normalizers))
    return float(np.mean(scores))


def submission_rows(path: Path, solution) -> dict[str, np.ndarray]:
    """A kit submission's rows, checked by the kit's validator against ``solution``."""
    from competition.submission import validate_submission

    checked = validate_submission(path, solution.expected_configs())
    if not checked.ok:
        raise BenchError(f"{path}: not a valid submission ({checked.problems[0]})")
    return checked.rows


def test_scores(rows: dict[str, np.ndarray], solution, collection: Collection) -> np.ndarray:
    """The official per-graph scores of ``rows`` on ``collection``'s test graphs, in solution order."""
    from competition.scoring import Solution
    from competition.stats import per_graph_scores

    one = Solution(labels={collection.name: solution.labels[collection.name]})
    return per_graph_scores(rows, one).collections[collection.name].scores


@dataclasses.dataclass(frozen=True)
class RandomTop:
    """What a uniform random top ``k`` scores on one kernel: each score it can get, with its chance."""

    scores: np.ndarray
    chances: np.ndarray

    @property
    def expectation(self) -> float:
        return float(np.dot(self.chances, self.scores))

    def chance_below(self, score: float) -> float:
        """The chance that a random top k scores below ``score`` (a tie counts half): 0.5 on average for
        a random pick itself."""
        tol = 1e-9 * max(1.0, abs(score))
        below = self.chances[self.scores < score - tol].sum()
        tied = self.chances[np.abs(self.scores - score) <= tol].sum()
        return float(below + 0.5 * tied)


def random_top(runtimes: np.ndarray, normalizers: np.ndarray, k: int = 5) -> RandomTop:
    """The tile score of ``k`` configs drawn uniformly without replacement: with the kernel's ``n``
    configs sorted fastest first, the i-th fastest is the best drawn with chance C(n - i, k - 1) /
    C(n, k), and the score is then ``2 - y_i / y_1`` (the metric's)."""
    from scipy.special import comb

    y = np.sort(np.asarray(runtimes, dtype=np.float64) / np.asarray(normalizers, dtype=np.float64))
    n = y.size
    if n <= k:
        return RandomTop(np.array([1.0]), np.array([1.0]))
    i = np.arange(1, n - k + 2)
    chances = comb(n - i, k - 1, exact=False) / comb(n, k, exact=False)
    return RandomTop(2.0 - y[: i.size] / y[0], chances / chances.sum())


def cell_summary(per_run: Sequence[np.ndarray], collection: str, seed: int = 0) -> dict:
    """One method on one collection over its runs: the score of each run (mean over graphs), their
    mean, spread (lowest and highest run, standard deviation) and the 95 % interval over graphs of the
    run-averaged per-graph scores (the kit's ``intervals``, ``tpugraphs report``'s default method)."""
    from competition.stats.bootstrap import intervals

    runs = [float(np.mean(s)) for s in per_run]
    pooled = np.mean(np.stack(per_run), axis=0)
    overall, _ = intervals({collection: pooled}, seed=seed)
    return {"runs": [round(r, 4) for r in runs], "mean": float(np.mean(runs)), "run_low": min(runs),
            "run_high": max(runs), "run_sd": float(np.std(runs, ddof=1)) if len(runs) > 1 else 0.0,
            "low": overall.low, "high": overall.high}


def paired(gnn_runs: Sequence[np.ndarray], upstream_runs: Sequence[np.ndarray], collection: str,
           seed: int = 0) -> dict:
    """gnn - upstream on one collection: the paired 95 % interval over graphs of the run-averaged
    per-graph scores (``tpugraphs compare``'s default method), and each run pair's difference (runs
    paired by seed)."""
    from competition.stats.bootstrap import GraphScores, compare

    a = GraphScores.from_arrays("upstream", {collection: np.mean(np.stack(upstream_runs), axis=0)})
    b = GraphScores.from_arrays("gnn", {collection: np.mean(np.stack(gnn_runs), axis=0)})
    diff = compare(a, b, seed=seed).overall.interval
    pairs = [float(np.mean(g) - np.mean(u)) for g, u in zip(gnn_runs, upstream_runs, strict=False)]
    return {"diff": diff.estimate, "ci_low": diff.low, "ci_high": diff.high, "pair_diffs": pairs}


def verdict(diff: dict, gnn: dict, upstream: dict) -> str:
    """``higher``, ``level`` or ``lower``: the gnn against the upstream on one collection, read from
    both the paired interval over graphs and the run-to-run spread.

    higher: the paired interval lies above 0 and every gnn run beats every upstream run; level: the
    paired interval reaches 0 or above and the gnn's best run reaches the upstream's worst (neither
    reading puts the gnn below); lower: otherwise. With one run on either side the spread is not
    measured, and the verdict says so: it then rests on the paired interval alone."""
    if diff["ci_low"] > 0 and gnn["run_low"] > upstream["run_high"]:
        found = "higher"
    elif diff["ci_high"] >= 0 and gnn["run_high"] >= upstream["run_low"]:
        found = "level"
    else:
        found = "lower"
    if min(gnn.get("n", 2), upstream.get("n", 2)) < 2:
        return f"{found} by the paired interval (one run: spread not measured)"
    return found


# -- the tiles, read per kernel ------------------------------------------------------------------------

SIZE_BANDS = ((0, 40, "< 40"), (40, 151, "40-150"), (151, None, "> 150"))  # configs per kernel
RANDOM_EXPECTED = "random (expected)"  # the tile reading's row of a random top 5's expected score


def tile_reading(per_method: dict[str, list[np.ndarray]], configs: np.ndarray,
                 randoms: Sequence[RandomTop]) -> dict[str, dict]:
    """The tile scores per kernel: per method (its runs pooled: every kernel of every run), the median
    and mean, the worst kernel, and the mean by configs per kernel (``SIZE_BANDS``); against random, on
    the kernels with more than 5 configs (where a pick can miss): the share of kernels scored above a
    random top 5's expected score, and the chance of scoring above a random top 5 drawn on the same
    kernel (ties half; 0.5 is random's own), averaged over kernels. A random pick's score is skewed
    (mostly near its best, sometimes far below), so a random top 5 itself beats its own expectation on
    most kernels: the chance is the reading to trust."""
    informative = configs > 5
    expected = np.array([r.expectation for r in randoms])
    out: dict[str, dict] = {}
    for method, runs in {**per_method, RANDOM_EXPECTED: [expected]}.items():
        stacked = np.stack(runs)  # (runs, kernels)
        entry: dict = {"median": float(np.median(stacked)), "mean": float(np.mean(stacked)),
                       "min": float(np.min(stacked)), "runs": len(runs), "above_expected": None,
                       "chance_above_random": 0.5, "bands": {}}
        if method != RANDOM_EXPECTED:
            picked = stacked[:, informative]
            entry["above_expected"] = float(np.mean(picked > expected[informative] + 1e-12))
            kernels = [r for r, keep in zip(randoms, informative, strict=True) if keep]
            entry["chance_above_random"] = float(np.mean([[r.chance_below(v) for r, v in zip(kernels, row,
                                                                                            strict=True)]
                                                          for row in picked]))
        for low, high, label in SIZE_BANDS:
            mask = (configs >= low) & (configs < high if high is not None else True)
            entry["bands"][label] = {"kernels": int(mask.sum()),
                                     "mean": float(np.mean(stacked[:, mask])) if mask.any() else None,
                                     "median": float(np.median(stacked[:, mask])) if mask.any() else None}
        out[method] = entry
    return out


# -- the small competition -----------------------------------------------------------------------------


def bench_small(seed: int, args: argparse.Namespace, python: Path | None, say=print) -> dict:
    """Every method on the ``small`` competition of ``seed``, each run once per ``--run-seeds`` seed:
    per method and collection the runs' scores, spread and interval, times, memory and validation
    scores; the gnn against the upstream per collection; the tiles read per kernel; the equal-budget
    runs."""
    from competition.scoring import load_solution

    folder = build_small(seed, args.out, scale=args.scale, say=say)
    public, solution_file = folder / "public", folder / "private" / "solution.csv"
    solution = load_solution(solution_file)
    if python is not None:
        problem = upstream_data_problem(public)
        if problem:
            raise BenchError(f"--scale {args.scale} cannot run the upstream baselines: {problem}; use "
                             "--scale small, or --no-peers for the kit's side alone")
    runs_dir = args.out / "runs" / folder.name
    recipe: Recipe = args.recipe
    # method -> collection -> [per run: {"seed", "scores" (per graph), train_s, ... , "failed"}]
    runs: dict[str, dict[str, list[dict]]] = {}
    if python is not None:
        tree = folder / "peers-tree"
        link_peers_tree(public, tree)
        runs[UPSTREAM] = {}
        for collection in args.peer_collections:
            task = collection.task.name
            flags = recipe.task_flags(task, args.peer_epochs.get(task))
            cell = runs[UPSTREAM].setdefault(collection.name, [])
            for run_seed in args.run_seeds:
                run_dir = runs_dir / f"upstream-{SHORT[collection.name]}-r{run_seed}"
                result = run_peer(collection, tree, run_dir, flags=flags, seed=run_seed,
                                  threads=args.threads, fresh=args.fresh, python=python, say=say)
                entry = {"seed": run_seed, "flags": flags, "train_s": result.get("train_s"),
                         "predict_s": result.get("predict_s"), "peak_mb": result["peak_mb"],
                         "curve": result["curve"], "failed": result.get("failed")}
                if "failed" not in result:
                    rows = {k: np.asarray(v) for k, v in result["test_rows"].items()}
                    entry["scores"] = test_scores(rows, solution, collection)
                    entry["validation_score"] = valid_score(collection, result["valid_rows"], public)
                cell.append(entry)
    for method in args.methods:
        runs[method] = {}
        for run_seed in args.run_seeds:
            result = run_kit(method, public, runs_dir / f"{method}-r{run_seed}", seed=run_seed,
                             collections=None, threads=args.threads, fresh=args.fresh, say=say)
            rows = submission_rows(Path(result["submission"]), solution) if "failed" not in result else {}
            for collection in COLLECTIONS:
                c = result.get("collections", {}).get(collection.name, {})
                entry = {"seed": run_seed, **c, "failed": result.get("failed")}
                if rows:
                    entry["scores"] = test_scores(rows, solution, collection)
                runs[method].setdefault(collection.name, []).append(entry)
    out = {"seed": seed, "scale": args.scale, "data": str(folder), "recipe": recipe.name,
           "recipe_text": describe_recipe(recipe, args.peer_epochs), "run_seeds": list(args.run_seeds),
           "cells": summarise_small(runs), "verdicts": {}, "runs": _runs_json(runs)}
    if UPSTREAM in runs and "gnn" in runs:
        for name, cell in runs[UPSTREAM].items():
            up, gnn = _scored(cell), _scored(runs["gnn"][name])
            if up and gnn:
                diff = paired([r["scores"] for r in gnn], [r["scores"] for r in up], name)
                out["verdicts"][name] = {**diff, "verdict": verdict(diff, out["cells"][name]["gnn"],
                                                                    out["cells"][name][UPSTREAM]),
                                         "time_ratio": _median(gnn, "train_s") / _median(up, "train_s")}
    tile = COLLECTION_BY_NAME["tile:xla"]
    labels = solution.labels[tile.name]
    configs = labels.config_counts
    randoms = [random_top(labels.runtimes[a:b], labels.normalizers[a:b])
               for a, b in zip(labels.offsets[:-1], labels.offsets[1:], strict=True)]
    per_method = {m: [r["scores"] for r in _scored(cells.get(tile.name, []))] for m, cells in runs.items()}
    out["tile_reading"] = tile_reading({m: v for m, v in per_method.items() if v}, configs, randoms)
    if UPSTREAM in runs and "gnn" in runs:
        out["equal_budget"] = equal_budget(runs, public, solution, runs_dir, args, say)
    return out


def _scored(cell: Sequence[dict]) -> list[dict]:
    """The runs of a cell that were scored (all of them, or none when any failed)."""
    return list(cell) if cell and all("scores" in r for r in cell) else []


def _median(runs: Sequence[dict], key: str) -> float:
    values = [r[key] for r in runs if r.get(key) is not None]
    return float(np.median(values)) if values else float("nan")


def summarise_small(runs: dict[str, dict[str, list[dict]]]) -> dict[str, dict[str, dict]]:
    """collection (and ``final``) -> method -> its cell: the runs' scores and spread, the interval over
    graphs, median train / predict seconds, the largest peak, the mean validation score; or why it
    failed."""
    cells: dict[str, dict[str, dict]] = {}
    for method, per in runs.items():
        for name, cell in per.items():
            failed = next((r["failed"] for r in cell if r.get("failed")), None)
            entry: dict = {"n": len(cell), "failed": failed}
            scored = _scored(cell)
            if scored:
                entry.update(cell_summary([r["scores"] for r in scored], name))
                valids = [r["validation_score"] for r in scored if r.get("validation_score") is not None]
                entry["valid"] = float(np.mean(valids)) if valids else None
            entry.update(train_s=_median(cell, "train_s"), predict_s=_median(cell, "predict_s"),
                         peak_mb=max((r.get("peak_mb") or 0.0 for r in cell), default=0.0))
            cells.setdefault(name, {})[method] = entry
        if len(per) == len(COLLECTIONS) and all(_scored(per[c.name]) for c in COLLECTIONS):
            n = min(len(per[c.name]) for c in COLLECTIONS)
            finals = [np.array([np.mean(per[c.name][k]["scores"]) for c in COLLECTIONS]) for k in range(n)]
            runs_final = [float(np.mean(f)) for f in finals]
            cells.setdefault("final", {})[method] = {
                "n": n, "failed": None, "runs": [round(r, 4) for r in runs_final],
                "mean": float(np.mean(runs_final)), "run_low": min(runs_final), "run_high": max(runs_final),
                "run_sd": float(np.std(runs_final, ddof=1)) if n > 1 else 0.0,
                "train_s": sum(cells[c.name][method]["train_s"] for c in COLLECTIONS),
                "predict_s": sum(cells[c.name][method]["predict_s"] for c in COLLECTIONS)}
    return cells


def _runs_json(runs: dict[str, dict[str, list[dict]]]) -> dict:
    """Every run for results.json: its per-graph test scores as lists, its curve, times and seed."""
    return {m: {name: [{k: (v.round(5).tolist() if isinstance(v, np.ndarray) else v) for k, v in r.items()}
                       for r in cell] for name, cell in per.items()} for m, per in runs.items()}


def equal_budget(runs: dict[str, dict[str, list[dict]]], public: Path, solution, runs_dir: Path,
                 args: argparse.Namespace, say=print) -> dict[str, dict]:
    """Each method at the other's training time, per collection the upstream ran:

    - on the ``--equal-budget`` collections, the gnn given the upstream's median training time
      (``--time-budget``, with its epochs raised by the ratio of the two times so the budget, not the
      epoch count, ends the training), one run per ``--run-seeds`` seed (the first ``--budget-runs``),
      scored on the test graphs;
    - the upstream stopped at the gnn's median training time: how many epochs it had finished by then
      (from its validation curve's timestamps, seconds since the program started) and its validation
      OPA at that epoch; none finished means it had no trained model to rank with."""
    out: dict[str, dict] = {}
    wanted = {c.name for c in args.equal_budget}
    for name, up_cell in runs[UPSTREAM].items():
        up, gnn = _scored(up_cell), _scored(runs["gnn"][name])
        if not up or not gnn:
            continue
        collection = COLLECTION_BY_NAME[name]
        up_time, gnn_time = _median(up, "train_s"), _median(gnn, "train_s")
        param = "tile_epochs" if collection.task.name == "tile" else "layout_epochs"
        default = 20 if collection.task.name == "tile" else 45
        epochs = int(min(default * 64, max(default, round(default * up_time / gnn_time))))
        extra = ["--time-budget", f"{up_time:.0f}", "--param", f"{param}={epochs}"]
        scores, times = [], []
        for run_seed in args.run_seeds[: args.budget_runs] if name in wanted else ():
            result = run_kit("gnn", public, runs_dir / f"gnn-budget-{SHORT[name]}-r{run_seed}", seed=run_seed,
                             collections=[collection], threads=args.threads, fresh=args.fresh, extra=extra,
                             say=say)
            if "failed" in result:
                continue
            rows = submission_rows_partial(Path(result["submission"]), solution, collection)
            scores.append(test_scores(rows, solution, collection))
            times.append(result["collections"][name]["train_s"])
        stopped = []
        for r in up:
            done = [p for p in r["curve"] if p["elapsed_s"] <= gnn_time]
            first = r["curve"][0]["elapsed_s"] if r["curve"] else None
            stopped.append({"seed": r["seed"], "epochs_done": len(done), "first_epoch_s": first,
                            "val_opa": done[-1]["val_opa"] if done else None})
        out[name] = {"upstream_train_s": up_time, "gnn_train_s": gnn_time, "gnn_epochs": epochs,
                     "gnn_budget": cell_summary(scores, name) if scores else None,
                     "budget_run": name in wanted,
                     "gnn_budget_train_s": float(np.median(times)) if times else None,
                     "upstream_at_gnn_time": stopped}
    return out


def submission_rows_partial(path: Path, solution, collection: Collection) -> dict[str, np.ndarray]:
    """The rows of ``collection`` in a submission of ``solve --collection``, each checked by the kit's
    row rule against its graph's config count; every test graph of the collection must be there."""
    from competition.submission.rules import parse_top_configs

    labels = solution.labels[collection.name]
    sizes = dict(zip(labels.ids, (int(n) for n in labels.config_counts), strict=True))
    with open(path, newline="", encoding="utf-8") as fh:
        found = {r["ID"]: r["TopConfigs"] for r in csv.DictReader(fh) if r["ID"] in sizes}
    missing = sorted(set(sizes) - set(found))
    if missing:
        raise BenchError(f"{path}: no row for {len(missing)} {collection.name} graph(s), e.g. {missing[0]}")
    return {row_id: parse_top_configs(text, collection, sizes[row_id]) for row_id, text in found.items()}


# -- the real graphs (within-graph protocol) ------------------------------------------------------------


def _positions(row: np.ndarray, n_configs: int) -> np.ndarray:
    """Predicted runtimes that reproduce ``row`` (fastest first; unlisted configs after, tied)."""
    position = np.full(n_configs, float(len(row)))
    position[np.asarray(row, dtype=np.int64)] = np.arange(len(row), dtype=np.float64)
    return position


def bench_real_within(args: argparse.Namespace, python: Path | None, say=print) -> list[dict]:
    """The within-graph protocol of ``make bench-real`` for the kit's methods and the peers, each run in
    its own process on the same written train / valid parts, ranking the same test parts."""
    from benchmarks import bench_real

    found, notes = bench_real.find_real_graphs(args.real, protos=True)
    for note in notes:
        say(f"  {note}")
    methods = [UPSTREAM] * (python is not None) + list(args.methods)
    out: list[dict] = []
    for real in found:
        if real.no_signal:
            say(f"  within {real.name}: left out, {real.no_signal}")
            continue
        if real.collection.task.name == "layout" and real.num_configs < bench_real.MIN_WITHIN_CONFIGS:
            say(f"  within {real.name}: left out, {real.num_configs} configs "
                f"(< {bench_real.MIN_WITHIN_CONFIGS})")
            continue
        slug = hashlib.sha1(real.name.encode()).hexdigest()[:10]
        predictions: dict[str, list[list[np.ndarray]]] = {m: [] for m in methods}
        truths: list[list[bench_real.Truth]] = []
        timing = {m: {"train_s": 0.0, "predict_s": 0.0, "peak_mb": 0.0, "failed": None} for m in methods}
        for draw in range(args.real_draws):
            tree = args.out / "real" / slug / f"draw{draw}"
            if tree.exists():
                shutil.rmtree(tree)
            made = bench_real.within_tree(real, draw, tree)
            if made is None:
                break
            _, tests = made
            stems = _write_hidden_tests(real.collection, tests, split_dir(tree, real.collection, "test"))
            for seed in args.real_seeds:
                runs = args.out / "runs" / "real" / slug / f"draw{draw}-seed{seed}"
                for method in methods:
                    if timing[method]["failed"]:
                        continue
                    stats, rows, failed = _run_within(method, real.collection, tree, runs, seed, args,
                                                      python, say)
                    if failed:
                        timing[method]["failed"] = failed
                        continue
                    for key in ("train_s", "predict_s"):
                        timing[method][key] += stats[key]
                    if "epochs" in stats:
                        timing[method].setdefault("epochs", []).append(stats["epochs"])
                    timing[method]["peak_mb"] = max(timing[method]["peak_mb"], stats["peak_mb"])
                    predictions[method].append([
                        _positions(np.asarray(rows[f"{real.collection.name}:{stem}"]), g.num_configs)
                        for stem, g in zip(stems, tests, strict=True)])
            truths += [[bench_real.Truth.of(g) for g in tests]] * len(args.real_seeds)
            del tests, made
            shutil.rmtree(tree, ignore_errors=True)
        if not truths:
            say(f"  within {real.name}: left out, no kernel with 10+ configs")
            continue
        for method in methods:
            entry = _within_entry(real, method, predictions[method], truths, timing[method])
            out.append(entry)
            outcome = f"{entry['estimate']:+.3f}" if "estimate" in entry else f"failed: {entry['failed']}"
            say(f"  within {method:<10} {real.name:<52} {outcome}")
    return out


def _write_hidden_tests(collection: Collection, tests: Sequence, test_dir: Path) -> list[str]:
    """Write the test parts as test files (runtimes zeroed; a tile kernel's normalizers 1, as in the
    released test files); their stems."""
    from competition.data.graphs import save_graph

    stems = []
    for k, graph in enumerate(tests):
        hidden = dataclasses.replace(graph, config_runtime=np.zeros_like(graph.config_runtime))
        if collection.task.name == "tile":
            hidden = dataclasses.replace(
                hidden, config_runtime_normalizers=np.ones_like(graph.config_runtime_normalizers))
        save_graph(hidden, test_dir / f"t{k}.npz", compressed=False)
        stems.append(f"t{k}")
    return stems


def matched_epochs(collection: Collection, tree: Path) -> int:
    """The upstream's epochs on a within-graph tree so that it samples as many configs as the training
    part holds: an epoch samples ``LAYOUT_CONFIGS`` configs of each layout training graph
    (``TILE_CONFIGS`` of each tile kernel), so epochs = ceil(training configs / configs per epoch).
    The layout recipe's ``--max_configs`` is left out here: the upstream keeps every training config,
    as the kit's methods do."""
    per_graph = TILE_CONFIGS if collection.task.name == "tile" else LAYOUT_CONFIGS
    sizes = [n for n in graph_sizes(tree, collection, "train").values() if n >= per_graph]
    if not sizes:
        return 1
    return max(1, -(-sum(sizes) // (per_graph * len(sizes))))


def _run_within(method: str, collection: Collection, tree: Path, runs: Path, seed: int,
                args: argparse.Namespace, python: Path | None, say) -> tuple[dict, dict, str | None]:
    """One method on one within-graph tree: (its train / predict seconds and peak, its test rows by ID,
    why it failed or None). The kit's peak is its own reading (``solve``'s per-collection sample), as in
    the small tables; a peer's, its process's (``run_measured``)."""
    if method == UPSTREAM:
        problem = collection_problem(tree, collection)
        if problem:
            return {}, {}, f"not run: {problem}"
        peer_tree = tree / "peers"
        _peer_tree_for(tree, collection, peer_tree)
        task = collection.task.name
        epochs = args.real_peer_epochs.get(task) or matched_epochs(collection, tree)
        flags = args.recipe.task_flags(task, epochs) if task == "tile" else [f"--epochs={epochs}"]
        result = run_peer(collection, peer_tree, runs / "upstream", flags=flags,
                          seed=seed, threads=args.threads, fresh=args.fresh, python=python, say=say)
        result["epochs"] = epochs
        return result, result.get("test_rows", {}), result.get("failed")
    result = run_kit(method, tree, runs / method, seed=seed, collections=[collection], threads=args.threads,
                     fresh=args.fresh, say=say)
    if "failed" in result:
        return {}, {}, result["failed"]
    with open(result["submission"], newline="", encoding="utf-8") as fh:
        rows = {r["ID"]: [int(x) for x in r["TopConfigs"].split(";")] for r in csv.DictReader(fh)}
    return result["collections"][collection.name], rows, None


def _within_entry(real, method: str, predictions: list[list[np.ndarray]], truths: list, timing: dict) -> dict:
    """One row of the real table: the method's score over its runs with ``bench_real``'s interval."""
    from benchmarks import bench_real

    entry = {"graph": real.name, "method": method, **timing, "runs": len(predictions)}
    if timing.get("epochs"):
        low, high = min(timing["epochs"]), max(timing["epochs"])
        entry["epochs"] = str(low) if low == high else f"{low}-{high}"
    if not timing["failed"] and predictions:
        cell = bench_real.Cell(real.name, method, "within", units=[], fit_seconds=timing["train_s"])
        bench_real.summarise_cell(cell, real, predictions, truths, seed=0)
        entry.update(estimate=cell.estimate, low=cell.low, high=cell.high, scores=cell.runs)
    return entry


def _peer_tree_for(tree: Path, collection: Collection, root: Path) -> None:
    """A peers tree beside a within-graph tree: its train, valid and test parts of ``collection``."""
    if root.exists():
        shutil.rmtree(root)
    for split in ("train", "valid", "test"):
        target = root / "npz" / collection.subpath / split
        target.mkdir(parents=True, exist_ok=True)
        for path in sorted(split_dir(tree, collection, split).glob("*.npz")):
            _link(path, target / path.name)


# -- tables ----------------------------------------------------------------------------------------------


def _cell(value: float | None, fmt: str = "{:.3f}") -> str:
    return "-" if value is None or (isinstance(value, float) and np.isnan(value)) else fmt.format(value)


def _label(method: str) -> str:
    return "upstream (TF-GNN)" if method == UPSTREAM else method


def _score_text(entry: dict | None) -> str:
    """``0.712 [0.601, 0.803]``: the mean of the runs with the interval over graphs."""
    if not entry:
        return "-"
    if entry.get("failed"):
        return f"failed: {entry['failed']}"
    if "mean" not in entry:
        return "-"
    interval = f" [{entry['low']:.3f}, {entry['high']:.3f}]" if "low" in entry else ""
    return f"{entry['mean']:.3f}{interval}"


def _spread_text(entry: dict | None) -> str:
    """``0.701-0.779 (sd 0.04)``: the lowest and highest run, their standard deviation."""
    if not entry or "mean" not in entry:
        return "-"
    if entry["n"] < 2:
        return "1 run"
    return f"{entry['run_low']:.3f}-{entry['run_high']:.3f} (sd {entry['run_sd']:.3f})"


def small_table(result: dict) -> str:
    """The Markdown tables of one ``small`` competition: scores with both spreads, the gnn against the
    upstream, the upstream's validation curves, the tiles per kernel and the equal-budget view."""
    n = len(result["run_seeds"])
    seeds = ",".join(map(str, result["run_seeds"]))
    runs = f"once (seed {seeds})" if n == 1 else f"{n} times (seeds {seeds})"
    lines = [f"`{result['scale']}` competition seed {result['seed']}; upstream recipe "
             f"{result['recipe_text']}; every method run {runs}. Hidden-test score: the "
             "mean of the runs [95 % interval over graphs of the run-averaged per-graph scores]; "
             "runs: lowest-highest run and their standard deviation; valid: the mean validation "
             "score; train / predict s: median run; peak: the largest run's", "",
             "| collection | method | hidden test [graph interval] | runs | valid | train s | predict s "
             "| peak MB |",
             "|---|---|---|---|---|---|---|---|"]
    cells = result["cells"]
    for name in [*(c.name for c in COLLECTIONS), "final"]:
        for method, entry in cells.get(name, {}).items():
            label = f"**{name}**" if name == "final" else name
            lines.append(f"| {label} | {_label(method)} | {_score_text(entry)} | "
                         f"{_spread_text(entry)} | {_cell(entry.get('valid'))} | "
                         f"{_cell(entry.get('train_s'), '{:.0f}')} | "
                         f"{_cell(entry.get('predict_s'), '{:.1f}')} | "
                         f"{_cell(entry.get('peak_mb'), '{:.0f}')} |")
    if result["verdicts"]:
        lines += ["", "gnn against the upstream (paired 95 % interval over graphs of the run-averaged "
                  "gnn - upstream; each seed pair's difference; the gnn's training time over the "
                  "upstream's; the verdict reads both: higher = the interval above 0 and every gnn run "
                  "above every upstream run, level = neither puts the gnn below, lower = otherwise):", "",
                  "| collection | gnn - upstream [paired interval] | per seed pair | time ratio | verdict |",
                  "|---|---|---|---|---|"]
        for name, v in result["verdicts"].items():
            pairs = ", ".join(f"{d:+.3f}" for d in v["pair_diffs"])
            lines.append(f"| {name} | {v['diff']:+.3f} [{v['ci_low']:+.3f}, {v['ci_high']:+.3f}] | {pairs} | "
                         f"{v['time_ratio']:.2f} | {v['verdict']} |")
    curves = result["runs"].get(UPSTREAM, {})
    if curves:
        lines += ["", "The upstream's validation curves (its own sampled validation OPA after each epoch; "
                  "the best epoch is the model it keeps):", "",
                  "| collection | seed | epochs | best val OPA (epoch) | last | val OPA by epoch |",
                  "|---|---|---|---|---|---|"]
        for name, cell in curves.items():
            for run in cell:
                opa = [p["val_opa"] for p in run.get("curve", []) if p.get("val_opa") is not None]
                if not opa:
                    lines.append(f"| {name} | {run['seed']} | 0 | - | - | {run.get('failed') or '-'} |")
                    continue
                best = int(np.argmax(opa))
                lines.append(f"| {name} | {run['seed']} | {len(opa)} | {opa[best]:.3f} ({best + 1}) | "
                             f"{opa[-1]:.3f} | {curve_text(opa)} |")
    if result.get("tile_reading"):
        lines += ["", tile_table(result["tile_reading"])]
    if result.get("equal_budget"):
        lines += ["", budget_table(result["equal_budget"])]
    return "\n".join(lines)


def curve_text(values: Sequence[float], most: int = 12) -> str:
    """A validation curve in at most ``most`` values: every one, or every k-th epoch and the last."""
    step = -(-len(values) // most)
    if step == 1:
        return " ".join(f"{v:.2f}" for v in values)
    kept = list(range(0, len(values), step))
    if kept[-1] != len(values) - 1:
        kept.append(len(values) - 1)
    return f"every {step} epochs: " + " ".join(f"{values[k]:.2f}" for k in kept)


def tile_table(reading: dict[str, dict]) -> str:
    """The tiles per kernel (``tile_reading``)."""
    bands = [label for _, _, label in SIZE_BANDS]
    counts = next(iter(reading.values()))["bands"]
    lines = ["`tile:xla` per test kernel (each method's runs pooled): median and mean score, the worst "
             "kernel; on the kernels with more than 5 configs, the share scored above a random top 5's "
             "expected score and the chance of beating a random top 5 drawn on the same kernel (ties "
             "half, random's own 0.50); the mean by configs per kernel (kernels in each band):", "",
             "| method | median | mean | worst | above random's expectation | chance to beat random | "
             + " | ".join(f"{b} configs ({counts[b]['kernels']})" for b in bands) + " |",
             "|---|---|---|---|---|---|" + "---|" * len(bands)]
    for method, e in reading.items():
        share = "-" if e["above_expected"] is None else f"{e['above_expected']:.0%}"
        band = " | ".join(_cell(e["bands"][b]["mean"]) for b in bands)
        lines.append(f"| {_label(method)} | {e['median']:.3f} | {e['mean']:.3f} | {e['min']:.2f} | {share} | "
                     f"{e['chance_above_random']:.2f} | {band} |")
    return "\n".join(lines)


def budget_table(budget: dict[str, dict]) -> str:
    """The equal-budget view (``equal_budget``)."""
    lines = ["Equal budgets: the gnn given the upstream's median training time (epochs raised so the time "
             "budget ends it), and the upstream stopped at the gnn's:", "",
             "| collection | upstream train s | gnn at that budget: score [graph interval] | its runs | "
             "gnn train s | upstream epochs done at the gnn's time | its first epoch ended at |",
             "|---|---|---|---|---|---|---|"]
    for name, b in budget.items():
        stopped = b["upstream_at_gnn_time"]
        done = ", ".join(str(s["epochs_done"]) for s in stopped)
        first = ", ".join(_cell(s["first_epoch_s"], "{:.0f} s") for s in stopped)
        scored = {**b["gnn_budget"], "n": len(b["gnn_budget"]["runs"])} if b["gnn_budget"] else None
        score = _score_text(scored) if b.get("budget_run", True) else "not run (--equal-budget)"
        lines.append(f"| {name} | {b['upstream_train_s']:.0f} | {score} | {_spread_text(scored)} | "
                     f"{_cell(b['gnn_budget_train_s'], '{:.0f}')} (of {b['gnn_train_s']:.0f} at its "
                     f"defaults) | {done} | {first} |")
    return "\n".join(lines)


def real_table(entries: Sequence[dict], draws: int, seeds: Sequence[int]) -> str:
    """One Markdown table for the real graphs, naming the upstream's epochs on each graph."""
    lines = ["Real graphs, within-graph protocol (`make bench-real`'s 60 / 20 / 20 split of each graph's "
             f"configs; {draws} draw(s) x {len(seeds)} run(s); Kendall tau-b for a layout graph, the tile "
             "score over kernels; mean over runs with the 95 % interval of `benchmarks.bench_real`; "
             "times summed over runs, peak the largest run's; the upstream's epochs chosen so that "
             "it samples as many configs as the training part holds "
             f"({LAYOUT_CONFIGS} per graph per epoch)",
             "", "| real graph | method | score [95 % interval] | runs | upstream epochs | train s | "
             "predict s | peak MB |", "|---|---|---|---|---|---|---|---|"]
    for e in entries:
        score = (f"{e['estimate']:+.3f} [{e['low']:+.3f}, {e['high']:+.3f}]" if "estimate" in e
                 else f"failed: {e['failed']}")
        lines.append(f"| `{e['graph']}` | {_label(e['method'])} | {score} | {e['runs']} | "
                     f"{e.get('epochs') or '-'} | {e['train_s']:.0f} | {e['predict_s']:.1f} | "
                     f"{e['peak_mb']:.0f} |")
    return "\n".join(lines)


# -- command line ---------------------------------------------------------------------------------------


def _epochs(text: str) -> dict[str, int]:
    """``--peer-epochs``: ``tile=N,layout=M`` (either or both)."""
    out: dict[str, int] = {}
    for part in filter(None, text.split(",")):
        task, sep, value = part.partition("=")
        if not sep or task not in PUBLISHED_EPOCHS or not value.isdigit() or int(value) < 1:
            raise argparse.ArgumentTypeError(f"{part!r}: expected tile=N or layout=N with N >= 1")
        out[task] = int(value)
    return out


def _seeds(text: str) -> list[int]:
    try:
        seeds = [int(s) for s in text.split(",") if s.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: expected seeds like 0,1") from None
    if not seeds or any(s < 0 for s in seeds) or len(set(seeds)) != len(seeds):
        raise argparse.ArgumentTypeError(f"{text!r}: expected one or more distinct seeds >= 0")
    return seeds


def _collections(text: str) -> list[Collection]:
    names = [n for n in text.split(",") if n]
    unknown = [n for n in names if n not in COLLECTION_BY_NAME]
    if unknown or not names:
        raise argparse.ArgumentTypeError(f"{text!r}: expected collections among "
                                         f"{', '.join(COLLECTION_BY_NAME)}")
    return [c for c in COLLECTIONS if c.name in names]


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    from benchmarks.bench_real import DEFAULT_KAGGLE_TREE

    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_peers",
                                     description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="working folder (default: %(default)s)")
    parser.add_argument("--seeds", type=_seeds, default=[0],
                        help="small competitions, e.g. 0,1 (default: 0)")
    parser.add_argument("--run-seeds", type=_seeds, default=[0, 1, 2],
                        help="the runs of every method on each competition: the upstream's seed "
                             "(PEERS_SEED) and the kit's --seed (default: 0,1,2)")
    parser.add_argument("--methods", type=lambda s: [m for m in s.split(",") if m], default=list(KIT_METHODS),
                        help="the kit's methods (default: random,heuristic,gbdt,gnn)")
    parser.add_argument("--recipe", choices=sorted(RECIPES), default="documented",
                        help="the upstream's flags: documented (the upstream README's commands: layout "
                             "--epochs 10 --max_configs 1000; tile --model=EarlyJoinSAGE at its 100 "
                             "epochs; the default) or defaults (every flag at its default: layout 50 epochs, "
                             "all configs)")
    parser.add_argument("--peer-epochs", type=_epochs, default={},
                        help="other epochs than the recipe's, e.g. tile=10,layout=5; the tables name them")
    parser.add_argument("--peer-collections", type=_collections, default=list(COLLECTIONS),
                        help="the collections the upstream runs on (default: all five; the kit's methods "
                             "always run all five)")
    parser.add_argument("--equal-budget", type=_collections, default=[], metavar="COLLECTIONS",
                        help="on these collections (e.g. tile:xla; the upstream must run them), also run "
                             "the gnn at the upstream's training time, once per --run-seeds seed")
    parser.add_argument("--budget-runs", type=int, default=None, metavar="N",
                        help="--equal-budget runs on the first N --run-seeds seeds only (default: all)")
    parser.add_argument("--scale", choices=("tiny", "small"), default="small",
                        help="the embedded competition (default: small; tiny, for a quick check of the "
                             "kit's side, is refused with the upstream: too few kernels and configs)")
    parser.add_argument("--no-peers", action="store_true", help="the kit's methods only")
    parser.add_argument("--threads", type=int, default=2, help="threads of every run (default: 2)")
    parser.add_argument("--real", type=Path, default=DEFAULT_KAGGLE_TREE,
                        help="real Kaggle-layout tree for the within-graph protocol (default: %(default)s)")
    parser.add_argument("--real-peer-epochs", type=_epochs, default={},
                        help="the upstream's epochs on the real graphs (default: as many as make it sample "
                             "each training config once on average)")
    parser.add_argument("--real-draws", type=int, default=3, help="within-graph draws (default: 3)")
    parser.add_argument("--real-seeds", type=_seeds, default=[0], help="method seeds per draw (default: 0)")
    parser.add_argument("--no-real", action="store_true", help="the small competitions only")
    parser.add_argument("--no-small", action="store_true", help="the real graphs only")
    parser.add_argument("--fresh", action="store_true", help="rerun every run, none reused")
    parser.add_argument("--python", default="python3.11", help="interpreter of the peers' environment")
    args = parser.parse_args(argv)
    unknown = sorted(set(args.methods) - set(KIT_METHODS))
    if unknown:
        parser.error(f"--methods: unknown {', '.join(unknown)}; choose among {', '.join(KIT_METHODS)}")
    if args.threads < 1 or args.real_draws < 1:
        parser.error("--threads and --real-draws must be >= 1")
    outside = [c.name for c in args.equal_budget if c not in args.peer_collections]
    if outside:
        parser.error(f"--equal-budget: {', '.join(outside)} not among --peer-collections")
    args.recipe = RECIPES[args.recipe]
    return args


def main(argv: Sequence[str] | None = None, say: Callable[..., None] = print) -> int:
    args = parse_args(argv)
    missing = "--no-peers" if args.no_peers else peers_missing()
    python: Path | None = None
    if missing:
        say(f"upstream baselines skipped: {missing}; the kit's methods only")
    else:
        try:
            python = ensure_peers_env(python=args.python, say=say)
        except BenchError as exc:
            say(f"upstream baselines skipped: {exc}")
    started = time.perf_counter()
    results: dict = {"recipe": args.recipe.name,
                     "recipe_text": describe_recipe(args.recipe, args.peer_epochs),
                     "run_seeds": args.run_seeds, "threads": args.threads, "small": [], "real": []}
    try:
        if not args.no_small:
            for seed in args.seeds:
                say(f"== small seed {seed}")
                results["small"].append(bench_small(seed, args, python, say=say))
        if not args.no_real:
            say("== real graphs, within-graph")
            results["real"] = bench_real_within(args, python, say=say)
    except BenchError as exc:
        say(f"error: {exc}")
        return 1
    results["seconds"] = time.perf_counter() - started
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "results.json").write_text(json.dumps(results, indent=1))
    say("")
    for small in results["small"]:
        say(small_table(small) + "\n")
    if results["real"]:
        say(real_table(results["real"], args.real_draws, args.real_seeds))
    say(f"\n{results['seconds']:.0f} s; results in {args.out / 'results.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
