"""``tpugraphs tune`` on the small embedded competition: what tuning buys on the hidden test graphs, what
a trial costs, and two processes sharing one study.

1. **Tuned against the defaults.** For each method and collection: ``tpugraphs tune --trials N`` (a
   process of its own, SQLite storage), then ``tpugraphs solve`` with the best trial's settings (whatever
   PARAMS.json decided) and with the defaults, each scored on the collection's hidden test graphs
   (``private/solution.csv``) and compared graph by graph (``competition.stats.compare``: B = tuned,
   A = defaults). Reported: the trials (complete / pruned), seconds per complete and per pruned trial,
   the search and held-out figures and PARAMS.json's decision, and the test difference with its interval.
2. **Two processes, one study.** gbdt on ``layout:xla:random`` with short fits (``--shared-params``):
   one process running ``--shared-trials`` trials, then two processes sharing a fresh study of as many,
   on SQLite and on PostgreSQL (``--postgres URL``, or ``auto``: a throw-away local server as the tests
   start one). Reported: wall seconds, trials per minute, finished trials, trial numbers run twice and
   settings run twice among the complete trials.

No targets: the figures are reported whatever they show. Prints markdown tables. With ``--keep DIR``
a second run resumes the studies kept there (their finished trials count towards ``--trials``).

usage: python -m benchmarks.bench_tune [--competition data/embedded/small-seed0] [--trials 30]
       [--methods gbdt] [--collections layout:xla:random,layout:nlp:default] [--param KEY=VALUE ...]
       [--shared-trials 8] [--postgres auto|none|URL] [--skip-quality] [--skip-shared] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from dataclasses import replace
from pathlib import Path

import optuna

from benchmarks.bench_solutions import ensure_competition
from competition.scoring import load_solution
from competition.stats import compare, load_graph_scores

ROOT = Path(__file__).resolve().parents[1]
CLI = [sys.executable, "-c", "from competition.cli import main; raise SystemExit(main())"]
SHARED_PARAMS = ("num_boost_round=60", "min_boost_round=20", "early_stopping_rounds=20")


def _run(args: list[str]) -> tuple[subprocess.CompletedProcess, float]:
    started = time.perf_counter()
    done = subprocess.run([*CLI, *args], capture_output=True, text=True)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(args[:8])} ... failed:\n{done.stderr[-2000:]}")
    return done, seconds


def _params_args(params: dict) -> list[str]:
    return [item for key, value in params.items() for item in ("--param", f"{key}={_text(value)}")]


def _text(value: object) -> str:
    return ("true" if value else "false") if isinstance(value, bool) else str(value)


def test_scores(public: Path, solution, method: str, collection: str, params: dict, folder: Path, name: str):
    """Solve one collection with ``params`` and score its hidden test graphs (per graph)."""
    sub = folder / f"{name}.csv"
    _run(["solve", "--data", str(public), "--method", method, "--collection", collection, "--out", str(sub),
          "--quiet", *_params_args(params)])
    only = replace(solution, labels={collection: solution.labels[collection]})  # the collection's rows
    return load_graph_scores(sub, only, usage="all")


def quality(competition: Path, method: str, collection: str, trials: int, fixed: list[str],
            folder: Path) -> dict:
    """One study, then the best trial's settings against the defaults on the hidden test graphs."""
    out = folder / f"{method}-{collection.replace(':', '_')}.json"
    fixed_args = [item for text in fixed for item in ("--param", text)]
    _, seconds = _run(["tune", "--data", str(competition / "public"), "--method", method, "--collection",
                       collection, "--trials", str(trials), "--out", str(out), "--quiet",
                       "--sampler-seed", "0", *fixed_args])
    entry = json.loads(out.read_text())["collections"][collection]
    found = optuna.load_study(study_name=entry["study"]["name"],
                              storage=f"sqlite:///{out.resolve().with_suffix('.optuna.db')}").trials
    search_seconds = (max(t.datetime_complete for t in found if t.datetime_complete)
                      - min(t.datetime_start for t in found if t.datetime_start)).total_seconds()
    solution = load_solution(competition / "private" / "solution.csv")
    fixed_params = entry["space"]["fixed"]
    defaults = test_scores(competition / "public", solution, method, collection, fixed_params, folder,
                           f"{out.stem}-defaults")
    tuned = test_scores(competition / "public", solution, method, collection, entry["tuned_params"], folder,
                        f"{out.stem}-tuned")
    difference = compare(defaults, tuned).overall
    return {"method": method, "collection": collection, "search_seconds": search_seconds,
            "selection_run_seconds": seconds, "entry": entry,
            "test_defaults": defaults.score, "test_tuned": tuned.score, "test_difference": difference.entry()}


def quality_table(rows: list[dict]) -> str:
    lines = ["| method | collection | trials (complete / pruned) | s per complete / pruned trial | "
             "search: best (defaults) | held out: defaults / tuned, diff [95 % CI] | PARAMS.json | "
             "test: defaults / tuned | test diff [95 % CI], sign-flip p | trials' wall |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for row in rows:
        entry, d = row["entry"], row["test_difference"]
        trials, cost = entry["study"]["trials"], entry["study"]["seconds_per_trial"]
        held, nan = entry["held_out"], float("nan")
        search_defaults = entry["search"]["defaults_score"]
        search_defaults = nan if search_defaults is None else search_defaults
        lines.append(
            f"| {row['method']} | {row['collection']} | {trials.get('complete', 0)} / "
            f"{trials.get('pruned', 0)} | {cost.get('complete', nan):.1f} / {cost.get('pruned', nan):.1f} | "
            f"{entry['search']['best_score']:.3f} ({search_defaults:.3f}) | "
            f"{held['defaults']['score']:.3f} / {held['tuned']['score']:.3f}, "
            f"{held['difference']['diff']:+.3f} [{held['difference']['ci_low']:+.3f}, "
            f"{held['difference']['ci_high']:+.3f}] | {entry['source']} | {row['test_defaults']:.3f} / "
            f"{row['test_tuned']:.3f} | {d['diff']:+.3f} [{d['ci_low']:+.3f}, {d['ci_high']:+.3f}], "
            f"p = {d['p_sign_flip']:.3g} | {row['search_seconds']:.0f} s |")
    return "\n".join(lines)


def shared(public: Path, storage: str, processes: int, trials: int, folder: Path, label: str) -> dict:
    """``processes`` tune processes sharing one fresh study of ``trials`` trials."""
    study = f"bench-{label}-{processes}-{time.monotonic_ns()}"
    args = ["tune", "--data", str(public), "--method", "gbdt", "--collection", "layout:xla:random",
            "--storage", storage, "--study", study, "--trials", str(trials), "--quiet",
            *[item for text in SHARED_PARAMS for item in ("--param", text)]]
    started = time.perf_counter()
    running = [subprocess.Popen([*CLI, *args, "--out", str(folder / f"{study}-{i}.json")],
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
               for i in range(processes)]
    errors = [p.communicate()[1] for p in running]
    seconds = time.perf_counter() - started
    if any(p.returncode for p in running):
        raise SystemExit(f"shared study on {label} failed:\n" + "\n".join(errors)[-2000:])
    found = optuna.load_study(study_name=study, storage=storage).trials
    finished = [t for t in found if t.state.is_finished()]
    complete = [tuple(sorted(t.params.items())) for t in found if t.state.name == "COMPLETE"]
    workers = {t.user_attrs.get("worker") for t in found}
    return {"storage": label, "processes": processes, "seconds": seconds, "finished": len(finished),
            "per_minute": 60 * len(finished) / seconds,
            "numbers_twice": len(found) - len({t.number for t in found}),
            "settings_twice": len(complete) - len(set(complete)), "workers": len(workers)}


def shared_table(rows: list[dict]) -> str:
    lines = ["| storage | processes | finished trials | wall s (with the final selection) | trials per "
             "minute | processes that ran trials | trial numbers run twice | settings run twice |",
             "|---|---|---|---|---|---|---|---|"]
    lines += [f"| {r['storage']} | {r['processes']} | {r['finished']} | {r['seconds']:.0f} | "
              f"{r['per_minute']:.1f} | {r['workers']} | {r['numbers_twice']} | {r['settings_twice']} |"
              for r in rows]
    return "\n".join(lines)


def _postgres(stack: ExitStack, choice: str) -> str | None:
    if choice == "none":
        return None
    if choice != "auto":
        return choice

    def missing(reason: str) -> None:
        raise SystemExit(f"--postgres auto: {reason}; give --postgres URL or none")

    from tests.postgres_server import postgres_server

    return stack.enter_context(postgres_server(missing))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--competition", default=str(ROOT / "data" / "embedded" / "small-seed0"))
    parser.add_argument("--trials", type=int, default=30)
    parser.add_argument("--methods", default="gbdt,gnn")
    parser.add_argument("--collections", default="layout:xla:random,layout:nlp:default")
    parser.add_argument("--param", action="append", default=[], help="fixed for every study (KEY=VALUE)")
    parser.add_argument("--shared-trials", type=int, default=8)
    parser.add_argument("--postgres", default="auto")
    parser.add_argument("--skip-quality", action="store_true")
    parser.add_argument("--skip-shared", action="store_true")
    parser.add_argument("--keep", metavar="DIR")
    args = parser.parse_args(argv)
    competition = ensure_competition(Path(args.competition), 0)
    with ExitStack() as stack:
        folder = Path(args.keep) if args.keep else Path(stack.enter_context(tempfile.TemporaryDirectory()))
        folder.mkdir(parents=True, exist_ok=True)
        if not args.skip_quality:
            rows = [quality(competition, method, collection, args.trials, args.param, folder)
                    for method in args.methods.split(",") for collection in args.collections.split(",")]
            print(quality_table(rows), flush=True)
            (folder / "quality.json").write_text(json.dumps(rows, indent=2, default=str))
        if not args.skip_shared:
            storages = [("SQLite", f"sqlite:///{folder / 'shared.db'}")]
            url = _postgres(stack, args.postgres)
            storages += [("PostgreSQL", url)] if url else []
            rows = [shared(competition / "public", storage, processes, args.shared_trials, folder, label)
                    for label, storage in storages for processes in (1, 2)]
            print(shared_table(rows), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
