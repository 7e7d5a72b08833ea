"""``tpugraphs stats DATA_DIR [--json] [--collection C]``: realism statistics of a data tree."""

from __future__ import annotations

import argparse
import sys

HELP = ("realism statistics of a data tree (synthetic or real), to hold the embedded competition against "
        "real data")
EPILOG = """\
DATA_DIR is any data directory in the Kaggle layout: the download root, its npz_all/ or npz/ folder,
the output folder of 'tpugraphs synth' (its private/solution.csv then gives the test runtimes), or a
folder of real tuning protos featurized with 'tpugraphs featurize' into npz/<collection>/<split>/.
Collections and splits that are absent are skipped. Layout configs are streamed in chunks, so a
graph with 100,000 configs is described in a few MB.

Per layout collection: runtime spread, distinct configs and duplicate share, distinct settings per
configurable node, distinct node columns / configurable nodes (tied layout groups count once),
layout slots set by conv/dot tensors, whether a conv/dot group's settings are every combination of
its tensors' settings, tensors left wholly unset, share of -1, nodes with exactly one
consumer, runtime spread among duplicate configs, the most frequent opcodes. Per tile collection:
runtime spread, how often the default (the normaliser) is the fastest, best normalised runtime per
kernel. Figures read "min / median / max" over graphs (settings: over configurable nodes). The
definitions are in docs/synthetic-data.md.

exit status: 0 ok, 1 a file is not a readable graph (named), 2 usage error (no such folder, no data)

examples:
  tpugraphs stats data/demo
  tpugraphs stats data/demo --collection layout:xla:random --json
  tpugraphs featurize my_module.pb --out real/npz/layout/xla/random/train && tpugraphs stats real
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    from competition.collections import COLLECTIONS

    parser = subparsers.add_parser(
        "stats", help=HELP, description=HELP + ".", epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("data", metavar="DATA_DIR", help="a data directory in the Kaggle layout")
    parser.add_argument("--collection", action="append", choices=[c.name for c in COLLECTIONS],
                        metavar="NAME",
                        help="describe only this collection (repeatable; default: every collection present)")
    parser.add_argument("--split", action="append", choices=("train", "valid", "test"),
                        help="read only this split (repeatable; default: all three)")
    parser.add_argument("--json", action="store_true",
                        help="print one JSON object instead of markdown tables")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    import json
    from pathlib import Path

    from competition.collections import SPLITS
    from competition.data.description import describe, markdown
    from competition.data.tree import has_competition_data
    from competition.errors import EXIT_INVALID, DataFormatError, UsageError

    folder = Path(args.data)
    if not folder.is_dir():
        raise UsageError(f"{folder}: {'not a directory' if folder.exists() else 'no such directory'}")
    if not has_competition_data(folder) and has_competition_data(folder / "public"):
        folder = folder / "public"  # the output folder of `tpugraphs synth`
    if not has_competition_data(folder):
        raise UsageError(f"{folder}: holds no competition data (expected npz_all/npz/tile/... or "
                         "npz/layout/...: the Kaggle download tree, the output of 'tpugraphs synth', or "
                         "featurized protos)")
    private = folder.parent / "private"
    try:
        stats = describe(folder, private if (private / "solution.csv").is_file() else None,
                         splits=tuple(args.split or SPLITS), collections=args.collection)
    except DataFormatError as exc:
        print(f"error: {exc}", file=sys.stderr)
        if args.json:
            from competition.commands.json_problems import message_problem, problems_document

            print(problems_document([message_problem(str(exc))], EXIT_INVALID))
        return EXIT_INVALID
    if not stats:
        raise UsageError(f"{folder}: no npz files in the chosen collections and splits")
    print(json.dumps(stats, indent=1) if args.json else markdown(stats))
    return 0
