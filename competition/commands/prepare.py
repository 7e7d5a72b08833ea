"""``tpugraphs prepare --from DATA_DIR --out OUT``: a new hidden-label competition from labelled graphs."""

from __future__ import annotations

import argparse
import sys

from competition.collections import COLLECTION_NAMES

HELP = "carve a new competition with hidden test labels out of the labelled train/valid graphs of a data tree"
EPILOG = """\
The real competition's test labels were never released. prepare holds out some labelled graphs of
DATA_DIR (a Kaggle download, an upstream npz/ tree, or 'tpugraphs synth' output) as a new test set
and writes OUT/public/ (the Kaggle tree: train/valid from the remaining graphs, copied byte for byte;
test with anonymised 32-hex stems, runtimes zeroed; sample_submission.csv), OUT/private/solution.csv
(ID,Runtimes,Normalizers,Usage; half Public, half Private per collection) and OUT/private/split.json
(every source file, its family, where it went, its new stem and the configs it kept).

Rules: whole model families go to test (the family is the stem without batch size, topology,
precision, train/eval mode and kernel fingerprint: resnet50.4x4.fp16 and resnet50_batch_32_train are
both resnet50); --group-by graph splits by program instead. The default and random searches of a
program stay on the same side. Layout test graphs keep a random sample of --layout-test-configs
configs, tile test graphs all their configs, both in a new random order. The source's own test
graphs (unlabelled) are not used. The same DATA_DIR and --seed give byte-identical files. Nothing is
written to OUT until the competition is complete. The rules in full: competition/data/prepare/__init__.py;
a walk-through: docs/prepare.md.

exit status: 0 written, 1 unreadable source data or an impossible split (the message says what to
change), 2 usage error (bad option, missing folder, OUT not empty without --force)

examples:
  tpugraphs prepare --from data/predict-ai-model-runtime --out data/heldout --seed 0
  tpugraphs prepare --from data/kaggle --out data/tile_only --collection tile:xla --test-share 0.12
  tpugraphs leaderboard init --solution data/heldout/private/solution.csv --data data/heldout/public
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "prepare", help=HELP, description=HELP + ".", epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--from", dest="data", required=True, metavar="DATA_DIR",
                        help="labelled data in the Kaggle layout (download root, npz_all/ or npz/)")
    parser.add_argument("--out", required=True, metavar="OUT", help="folder for public/ and private/")
    parser.add_argument("--collection", action="append", dest="collections", choices=COLLECTION_NAMES,
                        metavar="C",
                        help="prepare only this collection (repeatable; default: every collection "
                             f"with labelled graphs); one of {', '.join(COLLECTION_NAMES)}")
    parser.add_argument("--seed", type=int, default=0, metavar="N", help="random seed, >= 0 (default: 0)")
    parser.add_argument("--test-share", type=float, default=0.1, metavar="F",
                        help="share of the labelled graphs held out as test graphs, per collection (tile) or "
                             "per source (layout xla, layout nlp), 0 < F < 1 (default: 0.1)")
    parser.add_argument("--layout-test-configs", type=int, default=1000, metavar="N",
                        help="configs kept per layout test graph, sampled at random (default: 1000, "
                             "as on Kaggle)")
    parser.add_argument("--group-by", choices=("family", "graph"), default="family",
                        help="what goes to test as a whole: a model family (default) or a single program")
    parser.add_argument("--force", action="store_true",
                        help="replace a non-empty OUT (once the new one is complete)")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from competition.data.prepare import PrepareError, prepare_competition
    from competition.errors import DataFormatError, UsageError

    try:
        summary = prepare_competition(
            args.data, args.out, collections=args.collections, seed=args.seed, test_share=args.test_share,
            layout_test_configs=args.layout_test_configs, group_by=args.group_by, force=args.force,
            progress=None,
        )
    except PrepareError as exc:
        print(f"tpugraphs prepare: cannot split the data: {exc}", file=sys.stderr)
        return 1
    except DataFormatError as exc:
        print(f"tpugraphs prepare: {exc} (nothing was written)", file=sys.stderr)
        return 1
    except (FileNotFoundError, FileExistsError, ValueError) as exc:
        raise UsageError(str(exc)) from None
    out = Path(args.out)
    print(f"prepared a competition from {args.data} (seed {summary.seed}) in {out} in "
          f"{summary.seconds:.1f} s: {summary.files} files, {summary.bytes / 1e6:.1f} MB")
    print(summary.table())
    ignored = sum(summary.ignored_test.values())
    if ignored:
        print(f"({ignored} unlabelled test graphs of the source were not used)")
    print(f"\n  data (participants):  {summary.public_dir}")
    print(f"  labels (host only):   {summary.solution}")
    print(f"  audit (host only):    {summary.split_report}")
    print("\nnext:")
    partial = "" if len(summary.graphs) == len(COLLECTION_NAMES) else "".join(
        f" --collection {name}" for name in summary.graphs)
    print(f"  tpugraphs validate {summary.sample_submission} --data {summary.public_dir}{partial}")
    if partial:
        print(f"  tpugraphs score SUBMISSION.csv --solution {summary.solution}")
    else:
        print(f"  tpugraphs leaderboard init --solution {summary.solution} --data {summary.public_dir}")
    return 0
