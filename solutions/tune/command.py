"""``tpugraphs tune``: search a method's settings with Optuna and keep what beats the defaults beyond the
noise. Imports only the standard library until the command runs (Optuna only then)."""

from __future__ import annotations

import argparse
import sys

HELP = "search a method's settings with Optuna; keep only what beats the defaults beyond the noise"
EPILOG = """\
Each collection is one Optuna study. A trial fits the method on the train split with the settings the
sampler suggests, selects its round or epoch on the search half of the valid graphs and is scored there
with the official metric (the mean over --seeds). The fit reports its selection score as it goes, so
the pruner stops hopeless trials early. The first trial is the collection's defaults.

When the trials are done, the best trial and the defaults are fitted again and scored on the held-out
half of the valid graphs, which no trial read, and compared graph by graph (the interval of the mean
difference and the exact sign-flip test, as 'tpugraphs compare'). PARAMS.json keeps the tuned settings
only when they beat the defaults there beyond the noise; otherwise it says so and gives the defaults.
'tpugraphs solve --params PARAMS.json' reads it (a --param still wins).

The search space is the one the method's settings declare (--list-space shows it), changed by --space:
  --space NAME=LOW..HIGH     a number between LOW and HIGH (add :log or :linear for the scale)
  --space NAME=a,b,c         one of the values listed
A setting given with --param is fixed for every trial and for the defaults.

The study is stored in a database: a SQLite file beside PARAMS.json by default (PARAMS.optuna.db;
rerun the same command to resume after Ctrl-C or a crash), or --storage URL, which several tune
processes on several machines share (PostgreSQL: postgresql+psycopg://USER:PASSWORD@HOST/DB).
--trials counts the study's finished trials over every process. optuna-dashboard shows the same
storage. Pictures of the search (optimisation history, setting importance) go beside PARAMS.json.

exit status: 0 written, 1 unreadable data, 2 usage error (an unknown setting or a range outside what
it allows, zero trials, a collection not in the data, a storage that cannot be opened, a study made for
another method, collection or data)

examples:
  tpugraphs tune --data data/demo/public --method gbdt --collection layout:xla:random --trials 30 \\
    --out params.json
  tpugraphs tune --data data/demo/public --method gnn --collection layout:nlp:default --trials 20 \\
    --param layout_epochs=20 --space lr=0.001..0.01:log --space hidden=32,64 --out params.json
  tpugraphs tune --data data/demo/public --method gbdt --collection tile:xla --trials 50 \\
    --storage postgresql+psycopg://tune:secret@db-host/tune --study gbdt-tile --out params.json
  tpugraphs tune --method gbdt --list-space --collection layout:xla:random
  tpugraphs solve --data data/demo/public --method gbdt --params params.json --out sub.csv
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("tune", help=HELP, description=HELP + ".", epilog=EPILOG,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", metavar="PUBLIC_DIR", help="data directory in the Kaggle layout")
    parser.add_argument("--method", metavar="NAME",
                        help="the method whose settings are searched: gbdt or gnn")
    parser.add_argument("--collection", action="append", metavar="NAME",
                        help="the collection to tune (repeatable: one study each)")
    parser.add_argument("--out", metavar="PARAMS.json",
                        help="the settings file to write (other collections already in it are kept)")
    parser.add_argument("--trials", type=int, default=30, metavar="N",
                        help="finished trials the study should hold, over every process and run "
                             "(default 30)")
    parser.add_argument("--space", action="append", default=[], metavar="NAME=RANGE",
                        help="search NAME over LOW..HIGH[:log|:linear] or a,b,c instead of its declared "
                             "range (repeatable)")
    parser.add_argument("--space-only", action="store_true",
                        help="search only the settings named with --space")
    parser.add_argument("--param", action="append", default=[], metavar="KEY=VALUE",
                        help="fix a setting for every trial and for the defaults (repeatable)")
    parser.add_argument("--list-space", action="store_true",
                        help="print the settings searched by default (with --collection: for it) and exit")
    parser.add_argument("--seeds", default="0", metavar="N,N,...",
                        help="fit each trial once per seed; its score is the mean (default: 0)")
    parser.add_argument("--holdout", type=float, default=0.5, metavar="SHARE",
                        help="share of the valid graphs held out for the final comparison (default 0.5)")
    parser.add_argument("--split-seed", type=int, default=0, metavar="N",
                        help="seed of the split of the valid graphs (default 0)")
    parser.add_argument("--confidence", type=float, default=0.95, metavar="LEVEL",
                        help="level of the held-out comparison (default 0.95)")
    parser.add_argument("--time-budget", type=float, metavar="SECONDS",
                        help="soft limit on one trial's training time (per seed)")
    parser.add_argument("--timeout", type=float, metavar="SECONDS",
                        help="start no trial of a study after this long (the running ones finish)")
    parser.add_argument("--storage", metavar="URL",
                        help="the study's database (default: sqlite beside --out: PARAMS.optuna.db)")
    parser.add_argument("--study", metavar="NAME",
                        help="the study's name (default METHOD:COLLECTION; with several collections "
                             "NAME:COLLECTION)")
    parser.add_argument("--pruner", default="median", metavar="median|hyperband|none",
                        help="how hopeless trials are stopped (default median)")
    parser.add_argument("--sampler-seed", type=int, metavar="N",
                        help="seed of the TPE sampler (default: none; give one for a repeatable "
                             "single-process study)")
    parser.add_argument("--device", default="auto", metavar="auto|cpu|cuda",
                        help="where the gnn trains (default: auto, the GPU when torch sees one)")
    parser.add_argument("--cache-dir", metavar="DIR",
                        help="read layout graphs through a processed cache here")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    parser.set_defaults(handler=run)


def list_space(method: str, collections: list[str] | None) -> str:
    """The settings searched by default, with their ranges (and, for a collection, what is left out)."""
    from competition.errors import UsageError
    from solutions.settings.schema import SettingError, schema
    from solutions.tune.runner import method_settings
    from solutions.tune.space import build_space
    from solutions.tune.study import TuneError

    try:
        info, settings = method_settings(method)
    except TuneError as exc:
        raise UsageError(str(exc)) from None
    lines = [f"settings tpugraphs tune searches for --method {info.name} (--space NAME=... changes one):"]
    if collections:
        from solutions.solve.checks import SolveError, resolve_collections

        try:
            space = build_space(settings, resolve_collections(collections)[0], {}, {})
        except (SolveError, SettingError) as exc:
            raise UsageError(str(exc)) from None
        lines += [f"  {d.name:<24} {d.range.text()}" for d in space.dimensions]
        lines += [f"  {name:<24} not searched: {why}" for name, why in space.left_out.items()]
    else:
        lines += [f"  {row.name:<24} {row.search.text()}" for row in schema(settings.settings_class).values()
                  if row.search is not None]
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from competition.errors import DataFormatError, UsageError
    from solutions.solve.command import param_texts, parse_seeds

    if args.list_space:
        if not args.method:
            raise UsageError("--list-space: give --method gbdt or --method gnn")
        print(list_space(args.method, args.collection))
        return 0
    missing = [flag for flag, value in (("--data", args.data), ("--method", args.method), ("--out", args.out))
               if not value]
    if missing:
        raise UsageError(f"the following arguments are required: {', '.join(missing)}")
    from solutions.tune.runner import TuneRequest, tune  # Optuna: a missing extra is named by cli.main
    from solutions.tune.study import TuneError

    request = TuneRequest(
        data_dir=args.data, method=args.method, out=Path(args.out), collections=args.collection or [],
        trials=args.trials, space=args.space, space_only=args.space_only,
        params=param_texts(args.param, no_prune=False), seeds=parse_seeds(args.seeds, 0) or [0],
        holdout=args.holdout, split_seed=args.split_seed, timeout_s=args.timeout,
        trial_budget_s=args.time_budget, storage=args.storage, study=args.study, pruner=args.pruner,
        sampler_seed=args.sampler_seed, confidence=args.confidence, device=args.device,
        cache_dir=Path(args.cache_dir) if args.cache_dir else None, progress=not args.quiet)
    try:
        tune(request, log=lambda line: print(line, flush=True))
    except TuneError as exc:
        raise UsageError(str(exc)) from None
    except DataFormatError as exc:
        print(f"tpugraphs tune: cannot read the data: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        storage = args.storage or f"the study beside {args.out}"
        print(f"tpugraphs tune: interrupted; the finished trials are kept in {storage}: run the same command "
              "to resume", file=sys.stderr)
        raise
    return 0
