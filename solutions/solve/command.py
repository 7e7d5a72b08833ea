"""``tpugraphs solve``: train a reference solution, report its validation score, write a submission."""

from __future__ import annotations

import argparse
import sys

HELP = "train a reference solution on the train split, score it on valid, write a test submission"
EPILOG = """\
For each collection (all five unless --collection is given) the method is trained on the train split,
scored on the valid split with the official metric (the mean over graphs, as the leaderboard computes
a collection score), and used to rank the test configs. The submission is checked with the validator
before the command reports success. Models are saved under --model-dir (default: next to --out,
SUB.csv -> SUB.models/<collection>/), so --predict-only can rerun prediction without training.
The same --seed on the same machine gives the same file.

{lists}

exit status: 0 written and valid, 1 unreadable data or a file that could not be written (disk full),
2 usage error (unknown method or collection, missing splits or saved models, CUDA asked for but absent,
a --cache-dir that cannot be created)

examples:
  tpugraphs solve --data data/demo/public --out sub.csv
  tpugraphs solve --data data/demo/public --method gbdt --out gbdt.csv --collection tile:xla
  tpugraphs solve --data data/demo/public --out sub.csv --predict-only
  tpugraphs solve --data data/demo/public --out sub.csv --param layout_epochs=40 --param hidden=64
  tpugraphs solve --data data/demo/public --out sub.csv --param pruning=khop:3
  tpugraphs solve --data data/demo/public --method gbdt --out sub.csv --seeds 0,1,2
  tpugraphs solve --data data/demo/public --method gbdt --out sub.csv --params params.json
  tpugraphs solve --data data/kaggle --out sub.csv --collection layout:nlp:random --cache-dir cache/
  tpugraphs solve --data data/kaggle --out sub.csv --param training=gst --param fusion=early \\
    --param pruning=none

several processes (the gnn; python -m solutions takes the same arguments as tpugraphs solve):
  torchrun --nproc_per_node=4 -m solutions --data data/kaggle --out sub.csv
  each process trains on its shard of the graphs (DistributedDataParallel: gloo on the CPU, NCCL with
  --device cuda); rank 0 writes the models and the submission; see docs/training-at-scale.md
"""


class _SolveHelp(argparse.RawDescriptionHelpFormatter):
    """The epilog's lists of methods and pruning names, read from their registries when help is printed
    (not when the command is registered: ``tpugraphs --help`` stays fast)."""

    def _format_text(self, text: str) -> str:
        if "{lists}" in text:
            text = text.replace("{lists}", help_lists())
        return super()._format_text(text)


def help_lists() -> str:
    """The methods (``solutions.methods.registry``) and the pruning names (``solutions.pruning``), as
    ``solve --help`` lists them."""
    from solutions.methods.registry import METHODS
    from solutions.pruning import pruning_help

    width = max(len(name) for name in METHODS)
    methods = "\n".join(f"  {name:<{width}}  {info.description}" for name, info in METHODS.items())
    return (f"methods (solutions/methods/registry.py):\n{methods}\n\n"
            "layout graph pruning of the gnn (--param pruning=NAME; saved with the model, which "
            "--predict-only\nreuses whatever the default has become):\n" + pruning_help())


def register(subparsers: argparse._SubParsersAction) -> None:
    from competition.collections import COLLECTION_NAMES

    parser = subparsers.add_parser(
        "solve", help=HELP, description=HELP + ".", epilog=EPILOG, formatter_class=_SolveHelp,
    )
    parser.add_argument("--data", metavar="PUBLIC_DIR",
                        help="data directory in the Kaggle layout (e.g. OUT/public from 'tpugraphs synth')")
    parser.add_argument("--method", default="gnn", metavar="NAME",
                        help="gnn (default), gbdt, heuristic or random")
    parser.add_argument("--out", metavar="SUB.csv", help="the submission file to write")
    parser.add_argument("--list-params", action="store_true",
                        help="print the settings of --method (for --param) with their defaults and "
                             "meanings, and exit; with --collection, the defaults that collection starts "
                             "from")
    parser.add_argument("--collection", action="append", choices=COLLECTION_NAMES, metavar="NAME",
                        help="solve only this collection (repeatable; default: all five: "
                             f"{', '.join(COLLECTION_NAMES)})")
    parser.add_argument("--seed", type=int, default=0, metavar="N", help="random seed (default: 0)")
    parser.add_argument("--seeds", metavar="N,N,...",
                        help="train one model per seed and blend their rankings (rank-mean, as 'tpugraphs "
                             "ensemble'); the report shows each seed's validation score and the blend's; "
                             "models are saved per seed. Replaces --seed")
    parser.add_argument("--no-prune", dest="prune", action="store_false",
                        help="do not prune layout graphs: the same as --param pruning=none (methods that use "
                             "the graph structure; pruning names below)")
    # --no-compress: the former name, kept for saved scripts
    parser.add_argument("--no-dedup", "--no-compress", dest="compress", action="store_false",
                        help="no config de-duplication or compact config storage (--no-compress: the "
                             "former name)")
    parser.add_argument("--device", default="auto", metavar="auto|cpu|cuda",
                        help="where learned methods run (default: auto, the GPU when torch sees "
                             "one, else cpu; cuda, cuda:N to require a GPU)")
    parser.add_argument("--model-dir", metavar="DIR",
                        help="where models are saved / loaded (default: SUB.models/)")
    parser.add_argument("--predict-only", action="store_true",
                        help="load the models saved in --model-dir instead of training")
    parser.add_argument("--time-budget", type=float, metavar="SECONDS",
                        help="soft limit on training time per collection")
    parser.add_argument("--cache-dir", metavar="DIR",
                        help="read layout graphs through a processed cache kept here (memory-mapped "
                             "int8 configs, built once per file and reused while fresh): training, "
                             "validation and test prediction then never load a 100k-config graph whole "
                             "(every method; same results)")
    parser.add_argument("--param", action="append", default=[], metavar="KEY=VALUE",
                        help="a setting of the method (repeatable), e.g. layout_epochs=40; "
                             "--list-params shows each setting's type, default and allowed values (none, "
                             "true, false as words)")
    parser.add_argument("--params", metavar="PARAMS.json",
                        help="start each collection from the settings this file gives it (written by "
                             "'tpugraphs tune'; a --param still wins); the saved models record the file")
    parser.add_argument("--json", nargs="?", const="-", metavar="REPORT.json",
                        help="the report as one JSON document: on stdout with no file name (progress and the "
                             "per-collection lines then go to stderr), else also written to REPORT.json; "
                             "with --list-params, the settings as JSON")
    parser.add_argument("--jobs", type=int, default=1, metavar="N",
                        help="collections fitted at once, each in a process of its own (default: 1); the "
                             "same submission and models. The gnn trains on one thread, so on a machine of "
                             "N cores --jobs N uses them all (each process holds one collection's memory; "
                             "no progress bars)")
    parser.add_argument("--quiet", action="store_true", help="no progress bars")
    parser.set_defaults(handler=run)


def param_texts(items: list[str], *, no_prune: bool) -> dict[str, str]:
    """``["hidden=64", "fusion=early"]`` -> ``{"hidden": "64", "fusion": "early"}`` (the method's schema
    reads each text, ``solutions.solve.runner.parse_method_params``); ``--no-prune`` is ``pruning=none``."""
    from competition.errors import UsageError
    from solutions.pruning import NO_PRUNING

    texts: dict[str, str] = {}
    for item in items:
        key, sep, text = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise UsageError(f"--param {item}: expected NAME=VALUE, e.g. --param layout_epochs=40")
        if key in texts and texts[key] != text:
            raise UsageError(f"--param {key}={texts[key]} and --param {key}={text} contradict each "
                             "other; give one")
        texts[key] = text
    if no_prune:
        if texts.get("pruning", NO_PRUNING).strip() != NO_PRUNING:
            raise UsageError(f"--no-prune and --param pruning={texts['pruning']} contradict each other "
                             f"(--no-prune means pruning={NO_PRUNING}); give one of them")
        texts["pruning"] = NO_PRUNING
    return texts


def parse_seeds(text: str | None, seed: int) -> list[int] | None:
    """``"0,1,2"`` -> ``[0, 1, 2]``; None when ``--seeds`` was not given. ``--seed`` must then be left
    alone."""
    from competition.errors import UsageError

    if text is None:
        return None
    if seed != 0:
        raise UsageError(f"--seed {seed} and --seeds {text} contradict each other; give one of them")
    parts = [p.strip() for p in text.split(",")]
    try:
        seeds = [int(p) for p in parts]
    except ValueError:
        raise UsageError(f"--seeds must be comma-separated integers, e.g. 0,1,2; got {text!r}") from None
    repeated = sorted({s for s in seeds if seeds.count(s) > 1})
    if repeated:
        raise UsageError(f"--seeds {text}: seed(s) {', '.join(map(str, repeated))} listed more than once "
                         f"(the same seed trains the same model)")
    if any(s < 0 for s in seeds):
        raise UsageError(f"--seeds must be non-negative integers; got {text!r}")
    return seeds


def _has_setting(method: str, name: str) -> bool:
    """Whether ``--method method`` has the setting ``name`` (read from its settings, no training code)."""
    from solutions.methods.registry import get_method
    from solutions.settings.schema import schema

    settings = get_method(method).load_settings()
    return settings is not None and name in schema(settings.settings_class)


def _input_failed(message: str, to_stdout: bool) -> int:
    """Exit 1 with ``message`` on stderr (and, for ``--json``, as one JSON document on stdout)."""
    from competition.commands.json_problems import message_problem, problems_document

    print(f"tpugraphs solve: {message}", file=sys.stderr)
    if to_stdout:
        print(problems_document([message_problem(message)], 1))
    return 1


def run(args: argparse.Namespace) -> int:
    import json
    import os
    from pathlib import Path

    from competition.errors import DataFormatError, UsageError
    from solutions.methods.base import FitOptions
    from solutions.methods.registry import METHODS
    from solutions.solve.runner import SolveError, describe_params, parse_method_params, solve

    if args.list_params:
        try:
            print(describe_params(args.method, as_json=args.json == "-", collections=args.collection))
        except SolveError as exc:
            raise UsageError(str(exc)) from None
        return 0
    missing = [flag for flag, value in (("--data", args.data), ("--out", args.out)) if not value]
    if missing:
        raise UsageError(f"the following arguments are required: {', '.join(missing)}")
    if args.time_budget is not None and args.time_budget <= 0:
        raise UsageError(f"--time-budget must be > 0 seconds, got {args.time_budget}")
    texts = param_texts(args.param, no_prune=not args.prune)
    if not args.prune and args.method in METHODS and not _has_setting(args.method, "pruning"):
        raise UsageError(f"--no-prune: --method {args.method} prunes no graphs (it has no pruning setting)")
    try:  # every --param read and checked by the method's schema before any data is read
        params = parse_method_params(args.method, texts)
    except SolveError as exc:
        raise UsageError(str(exc)) from None
    seeds = parse_seeds(args.seeds, args.seed)
    if seeds is not None and args.predict_only:
        raise UsageError("--seeds has no effect with --predict-only (the saved run's seeds are used)")
    options = FitOptions(seed=args.seed, device=args.device, compress=args.compress,
                         progress=not args.quiet, time_budget_s=args.time_budget,
                         cache_dir=Path(args.cache_dir) if args.cache_dir else None)
    to_stdout = args.json == "-"  # stdout carries the one JSON document; everything else goes to stderr
    try:
        report = solve(
            args.data, args.method, args.out, collections=args.collection, options=options,
            model_dir=args.model_dir, predict_only=args.predict_only, method_params=params,
            log=lambda line: print(line, flush=True, file=sys.stderr if to_stdout else sys.stdout),
            seeds=seeds, params_file=args.params, jobs=args.jobs,
        )
    except SolveError as exc:
        raise UsageError(str(exc)) from None
    except DataFormatError as exc:
        return _input_failed(f"cannot read the data: {exc}", to_stdout)
    except OSError as exc:  # e.g. the disk filled up while a cache or a model was written
        where = f" ({exc.filename})" if exc.filename else ""
        return _input_failed(f"cannot write: {exc.strerror or exc}{where}", to_stdout)
    if report is None:  # a torchrun process other than rank 0: that one reports and writes the file
        print(f"tpugraphs solve: rank {os.environ.get('RANK', '?')} done; rank 0 wrote {args.out}",
              flush=True, file=sys.stderr if to_stdout else sys.stdout)
        return 0
    if to_stdout:
        print(json.dumps(report.to_json_dict(), indent=2))
        return 0
    print()
    print(report.format_table())
    print(f"{report.submission}: valid ({report.rows} rows); models in {report.model_dir}")
    if args.json:
        Path(args.json).write_text(json.dumps(report.to_json_dict(), indent=2) + "\n", encoding="utf-8")
    return 0
