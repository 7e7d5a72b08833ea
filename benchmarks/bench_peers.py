"""Beside the official baselines (``make bench-peers``): the upstream TpuGraphs baselines and the kit's
methods on the same data, on the same cores, one at a time, scored by the kit's own scorer.

The peers are the dataset authors' programs (google-research-datasets/tpu_graphs, TensorFlow + TF-GNN),
read from ``../shared/peers/tpu_graphs`` and never copied into the kit: ``tiles_train.py`` for
``tile:xla`` and ``layout_train.py`` for each layout collection. They run in their own virtual
environment (``.venv-peers/``, pinned by ``benchmarks/peers-requirements.txt``, built on first use; the
kit's ``.venv`` is untouched) through ``benchmarks/peers_launch.py``, which limits TensorFlow to the
benchmark's threads, times the upstream inference loop, and repairs the one upstream call that crashes
at the pinned commit (its docstring says which and how).

**The embedded ``small`` competition** (``tpugraphs synth``, one per ``--seeds`` seed, under ``--out``):
each peer trains at its published default flags (``--peer-epochs`` lowers the epoch count and the table
says so) on the released npz tree the competition reproduces. Its test partition holds the test graphs
and, under a ``valid__`` prefix, the valid graphs, so the one trained model ranks both: its prediction
CSV becomes a kit submission (the test rows) and a validation score (the valid rows, the kit's
per-graph metric). The kit's random, heuristic, gbdt and gnn run at their defaults
(``tpugraphs solve --seed SEED``). Every submission is scored by ``tpugraphs report`` (the hidden-test
score with its 95 % bootstrap interval over graphs), and the gnn is compared with the upstream baseline
by ``tpugraphs compare`` (the paired interval of gnn - upstream per collection).

**The real graphs at hand** (``make bench-real``'s within-graph protocol, ``benchmarks.bench_real``):
each labelled real graph's configs are split 60 / 20 / 20 into train / valid / test by the same seeded
draws as ``bench_real``; the kit's methods (``tpugraphs solve``) and the peers train on the same train
parts (valid for their selection) and rank the same test parts, written with their runtimes zeroed.

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

from competition.collections import COLLECTIONS, Collection, parse_row_id
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


def run_peer(collection: Collection, tree: Path, run_dir: Path, *, epochs: int | None, threads: int,
             fresh: bool, python: Path, say=print) -> dict:
    """Train and run one upstream baseline on ``tree`` (a peers tree: ``link_peers_tree``); its test and
    valid rows, times and peak memory (``result.json`` in ``run_dir``)."""
    task = collection.task.name
    settings = {"peer": PROGRAMS[task], "collection": collection.name, "tree": str(tree),
                "epochs": epochs if epochs is not None else PUBLISHED_EPOCHS[task], "threads": threads}
    predictions = run_dir / "predictions.csv"
    cmd = [str(python), str(LAUNCHER), str(run_dir / "timings.json"), PROGRAMS[task],
           f"--data_root={peers_data_root(tree, task)}", f"--cache_dir={run_dir / 'cache'}",
           f"--out_dir={run_dir / 'out'}", f"--results_csv={predictions}"]
    if task == "layout":
        cmd += [f"--source={collection.source}", f"--search={collection.search}"]
    if epochs is not None:
        cmd.append(f"--epochs={epochs}")
    say(f"  upstream {PROGRAMS[task]:<16} {collection.name:<20} ...", end="", flush=True)
    measured = _measured(run_dir, settings, fresh, lambda: run_measured(
        cmd, cwd=PEERS_DIR, env=thread_env(threads), log=run_dir / "log.txt"))
    result = {"settings": settings, "method": UPSTREAM, "collection": collection.name,
              "wall_s": measured.wall_s, "peak_mb": measured.peak_mb}
    if measured.returncode != 0 or not predictions.is_file():
        result["failed"] = f"exit {measured.returncode}: {failure_reason(run_dir / 'log.txt')}"
        say(f" failed after {measured.wall_s:.0f} s: {result['failed']}")
        return result
    rows = read_peer_csv(predictions)
    sizes = graph_sizes(tree, collection, "test")
    test, valid = split_peer_rows(rows, collection, sizes)
    loops = json.loads((run_dir / "timings.json").read_text())["loops"]
    total, test_s = inference_seconds(loops, INFERENCE_LOOPS[task], [parse_row_id(r)[1] for r, _ in rows])
    result.update(train_s=measured.wall_s - total, predict_s=test_s, inference_s=total,
                  test_rows={k: v.tolist() for k, v in test.items()},
                  valid_rows={k: v.tolist() for k, v in valid.items()})
    say(f" train {result['train_s']:.0f} s, predict {test_s:.0f} s, peak {measured.peak_mb:.0f} MB")
    return result


def run_kit(method: str, data: Path, run_dir: Path, *, seed: int, collections: Sequence[Collection] | None,
            threads: int, fresh: bool, say=print) -> dict:
    """``tpugraphs solve`` of one kit method on ``data``: its submission, per-collection validation
    scores, fit and predict times and peak memory (``result.json`` in ``run_dir``)."""
    settings = {"method": method, "data": str(data), "seed": seed, "threads": threads,
                "collections": [c.name for c in collections] if collections else "all"}
    submission = run_dir / "submission.csv"
    cmd = [sys.executable, "-m", "competition.cli", "solve", "--data", str(data), "--method", method,
           "--seed", str(seed), "--out", str(submission), "--json", str(run_dir / "solve.json"), "--quiet"]
    for collection in collections or ():
        cmd += ["--collection", collection.name]
    say(f"  kit {method:<21} {', '.join(c.name for c in collections) if collections else 'all five':<20} ...",
        end="", flush=True)
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


def kit_cli_json(*args: str) -> dict:
    """Run a ``tpugraphs`` command with ``--json`` and return its document."""
    done = subprocess.run([sys.executable, "-m", "competition.cli", *args, "--json"], capture_output=True,
                          text=True, cwd=REPO)
    if done.returncode != 0:
        raise BenchError(f"tpugraphs {args[0]} failed: {_last_line(done.stderr or done.stdout)}")
    return json.loads(done.stdout)


def valid_score(collection: Collection, rows: dict[str, Sequence[int]], public: Path) -> float:
    """The mean official score of ``rows`` (by file stem) over the valid graphs of ``public``."""
    from competition.data.graphs import load_graph

    scores = []
    for path in sorted(split_dir(public, collection, "valid").glob("*.npz")):
        graph = load_graph(path, collection.task.name)
        scores.append(collection.task.score_graph(np.asarray(rows[path.stem]), graph.config_runtime.astype(
            np.float64), graph.normalizers))
    return float(np.mean(scores))


# -- the small competition -----------------------------------------------------------------------------


def bench_small(seed: int, args: argparse.Namespace, python: Path | None, say=print) -> dict:
    """Every method on the ``small`` competition of ``seed``: per method and collection, the scores,
    times and memory; the gnn against the upstream baseline per collection."""
    folder = build_small(seed, args.out, scale=args.scale, say=say)
    public, solution = folder / "public", folder / "private" / "solution.csv"
    runs = args.out / "runs" / folder.name
    table: dict[str, dict] = {}
    submissions: dict[str, Path] = {}
    if python is not None:
        tree = folder / "peers-tree"
        link_peers_tree(public, tree)
        rows: dict[str, np.ndarray] = {}
        per_collection: dict[str, dict] = {}
        for collection in COLLECTIONS:
            epochs = args.peer_epochs.get(collection.task.name)
            result = run_peer(collection, tree, runs / f"upstream-{SHORT[collection.name]}", epochs=epochs,
                              threads=args.threads, fresh=args.fresh, python=python, say=say)
            entry = {"train_s": result.get("train_s"), "predict_s": result.get("predict_s"),
                     "peak_mb": result["peak_mb"],
                     "epochs": result["settings"]["epochs"], "failed": result.get("failed")}
            if "failed" not in result:
                rows.update({k: np.asarray(v) for k, v in result["test_rows"].items()})
                entry["validation_score"] = valid_score(collection, result["valid_rows"], public)
            per_collection[collection.name] = entry
        table[UPSTREAM] = {"collections": per_collection}
        if all(e["failed"] is None for e in per_collection.values()):
            from competition.predictions import write_submission

            submissions[UPSTREAM] = write_submission(runs / "upstream.csv", rows)
    for method in args.methods:
        result = run_kit(method, public, runs / method, seed=seed, collections=None, threads=args.threads,
                         fresh=args.fresh, say=say)
        table[method] = {"collections": result.get("collections", {}), "failed": result.get("failed")}
        if "failed" not in result:
            submissions[method] = Path(result["submission"])
    for method, submission in submissions.items():
        report = kit_cli_json("report", str(submission), "--solution", str(solution), "--seed", "0")
        table[method]["test"] = {key: report[key] for key in ("score", "ci_low", "ci_high", "collections")}
    verdicts = {}
    if UPSTREAM in submissions and "gnn" in submissions:
        compared = kit_cli_json("compare", str(submissions[UPSTREAM]), str(submissions["gnn"]), "--solution",
                                str(solution), "--seed", "0", "--top", "0")
        verdicts = gnn_verdicts(compared, table[UPSTREAM]["collections"], table["gnn"]["collections"])
    return {"seed": seed, "scale": args.scale, "data": str(folder), "methods": table, "verdicts": verdicts}


def gnn_verdicts(compared: dict, upstream: dict[str, dict], gnn: dict[str, dict]) -> dict[str, dict]:
    """Per collection: does the gnn score at least the upstream baseline (the paired interval of
    gnn - upstream reaches 0 or above) in at most half its training time?"""
    verdicts = {}
    for name, diff in compared["collections"].items():
        up_train, gnn_train = upstream[name].get("train_s"), gnn.get(name, {}).get("train_s")
        ratio = gnn_train / up_train if up_train and gnn_train is not None else float("nan")
        score_ok = diff["ci_high"] >= 0
        time_ok = ratio <= 0.5
        verdicts[name] = {"diff": diff["diff"], "ci_low": diff["ci_low"], "ci_high": diff["ci_high"],
                          "time_ratio": ratio, "score_ok": score_ok, "time_ok": time_ok,
                          "holds": bool(score_ok and time_ok)}
    return verdicts


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


def _run_within(method: str, collection: Collection, tree: Path, runs: Path, seed: int,
                args: argparse.Namespace, python: Path | None, say) -> tuple[dict, dict, str | None]:
    """One method on one within-graph tree: (its train / predict seconds and peak, its test rows by ID,
    why it failed or None). The kit's peak is its own reading (``solve``'s per-collection sample), as in
    the small tables; a peer's, its process's (``run_measured``)."""
    if method == UPSTREAM:
        peer_tree = tree / "peers"
        _peer_tree_for(tree, collection, peer_tree)
        result = run_peer(collection, peer_tree, runs / "upstream",
                          epochs=args.real_peer_epochs.get(collection.task.name), threads=args.threads,
                          fresh=args.fresh, python=python, say=say)
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


def small_table(result: dict) -> str:
    """One Markdown table for one ``small`` competition: per method, per collection and overall."""
    lines = [f"`{result['scale']}` seed {result['seed']} (hidden-test score with its 95 % bootstrap interval "
             "over graphs, `tpugraphs report`; validation score on the valid split; wall times and peak "
             "memory of the run)", "",
             "| method | collection | hidden test [95 % interval] | valid | train s | predict s | peak MB |",
             "|---|---|---|---|---|---|---|"]
    for method, entry in result["methods"].items():
        test = entry.get("test", {})
        per = entry.get("collections", {})
        name = method if method != UPSTREAM else "upstream (TF-GNN)"
        for collection in COLLECTIONS:
            c = per.get(collection.name, {})
            t = test.get("collections", {}).get(collection.name)
            failed = c.get("failed") or entry.get("failed")
            if t:
                score = f"{t['score']:.3f} [{t['ci_low']:.3f}, {t['ci_high']:.3f}]"
            else:
                score = f"failed: {failed}" if failed else "- (no submission: another collection failed)"
            epochs = c.get("epochs") if method == UPSTREAM else None
            label = collection.name + (f" ({epochs} epochs)" if epochs else "")
            lines.append(f"| {name} | {label} | {score} | {_cell(c.get('validation_score'))} | "
                         f"{_cell(c.get('train_s'), '{:.0f}')} | {_cell(c.get('predict_s'), '{:.1f}')} | "
                         f"{_cell(c.get('peak_mb'), '{:.0f}')} |")
        if test:
            valids = [per.get(c.name, {}).get("validation_score") for c in COLLECTIONS]
            valid = float(np.mean(valids)) if all(v is not None for v in valids) else None
            total = [sum(per[c.name][k] for c in COLLECTIONS if per.get(c.name, {}).get(k) is not None)
                     for k in ("train_s", "predict_s")]
            peak = max((per[c.name]["peak_mb"] for c in COLLECTIONS if c.name in per), default=None)
            final = f"**{test['score']:.3f}** [{test['ci_low']:.3f}, {test['ci_high']:.3f}]"
            lines.append(f"| {name} | **final** | {final} | {_cell(valid)} | {total[0]:.0f} | "
                         f"{total[1]:.1f} | {_cell(peak, '{:.0f}')} |")
    if result["verdicts"]:
        lines += ["", "gnn against the upstream baseline (paired 95 % interval of gnn - upstream over the "
                  "test graphs, `tpugraphs compare`; the gnn's training time over the upstream's):", "",
                  "| collection | gnn - upstream [95 % interval] | train time ratio | at least as good | "
                  "in half the time |", "|---|---|---|---|---|"]
        for name, v in result["verdicts"].items():
            lines.append(f"| {name} | {v['diff']:+.3f} [{v['ci_low']:+.3f}, {v['ci_high']:+.3f}] | "
                         f"{v['time_ratio']:.2f} | {'yes' if v['score_ok'] else '**no**'} | "
                         f"{'yes' if v['time_ok'] else '**no**'} |")
    return "\n".join(lines)


def real_table(entries: Sequence[dict], draws: int, seeds: Sequence[int], epochs: dict[str, int]) -> str:
    """One Markdown table for the real graphs; ``epochs``: the upstream programs' epochs (tile, layout)."""
    lines = ["Real graphs, within-graph protocol (`make bench-real`'s 60 / 20 / 20 split of each graph's "
             f"configs; {draws} draw(s) x {len(seeds)} run(s); Kendall tau-b for a layout graph, the tile "
             "score over kernels; mean over runs with the 95 % interval of `benchmarks.bench_real`; "
             "times summed over runs, peak the largest run's; the upstream programs ran "
             f"{epochs['layout']} epochs (layout) and {epochs['tile']} (tile))", "",
             "| real graph | method | score [95 % interval] | runs | train s | predict s | peak MB |",
             "|---|---|---|---|---|---|---|"]
    for e in entries:
        score = (f"{e['estimate']:+.3f} [{e['low']:+.3f}, {e['high']:+.3f}]" if "estimate" in e
                 else f"failed: {e['failed']}")
        name = e["method"] if e["method"] != UPSTREAM else "upstream (TF-GNN)"
        lines.append(f"| `{e['graph']}` | {name} | {score} | {e['runs']} | {e['train_s']:.0f} | "
                     f"{e['predict_s']:.1f} | {e['peak_mb']:.0f} |")
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
    if not seeds or any(s < 0 for s in seeds):
        raise argparse.ArgumentTypeError(f"{text!r}: expected one or more seeds >= 0")
    return seeds


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    from benchmarks.bench_real import DEFAULT_KAGGLE_TREE

    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_peers",
                                     description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="working folder (default: %(default)s)")
    parser.add_argument("--seeds", type=_seeds, default=[0, 1],
                        help="small competitions (and the kit's method seed on each), e.g. 0,1 (default)")
    parser.add_argument("--methods", type=lambda s: [m for m in s.split(",") if m], default=list(KIT_METHODS),
                        help="the kit's methods (default: random,heuristic,gbdt,gnn)")
    parser.add_argument("--peer-epochs", type=_epochs, default={},
                        help="fewer epochs than the upstream defaults (tile 100, layout 50), e.g. "
                             "tile=10,layout=5; the tables name the epochs each peer ran")
    parser.add_argument("--scale", choices=("tiny", "small"), default="small",
                        help="the embedded competition (default: small; tiny for a quick check of the run)")
    parser.add_argument("--no-peers", action="store_true", help="the kit's methods only")
    parser.add_argument("--threads", type=int, default=2, help="threads of every run (default: 2)")
    parser.add_argument("--real", type=Path, default=DEFAULT_KAGGLE_TREE,
                        help="real Kaggle-layout tree for the within-graph protocol (default: %(default)s)")
    parser.add_argument("--real-peer-epochs", type=_epochs, default={},
                        help="--peer-epochs for the real graphs (there one epoch is one step per training "
                             "graph)")
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
    epochs = {key: {t: chosen.get(t, e) for t, e in PUBLISHED_EPOCHS.items()}
              for key, chosen in (("small", args.peer_epochs), ("real", args.real_peer_epochs))}
    results: dict = {"peer_epochs": epochs, "threads": args.threads, "small": [], "real": []}
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
        say(real_table(results["real"], args.real_draws, args.real_seeds, epochs["real"]))
    say(f"\n{results['seconds']:.0f} s; results in {args.out / 'results.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
