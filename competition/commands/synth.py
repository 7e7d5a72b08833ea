"""``tpugraphs synth OUT --scale tiny|small|full --seed N``: build the embedded synthetic competition."""

from __future__ import annotations

import argparse

HELP = "build the embedded synthetic competition (Kaggle-shaped data plus hidden labels)"
EPILOG = """\
OUT/public/ is exactly the Kaggle download tree (sample_submission.csv, npz_all/npz/...), with the
test runtimes zeroed; OUT/private/solution.csv holds the hidden labels (ID,Runtimes,Normalizers,Usage).
The same seed gives byte-identical files, whatever --workers. Scales:
  tiny   tests: about a second, 0.2 MB, 43 files
  small  demo and training: under a minute on 2 cores, 13 MB, 746 files
  full   a rehearsal at the real release's size: 7,868 npz files with the real graph counts and
         size extremes (an xla program of ~43,600 nodes and ~2,250 configurable nodes measured
         20,000 times, nlp files of 100,040 configurations); measured on 2 shared cores: 39 min of
         CPU (48 min wall with --workers 2 under load), 3.1 GB of memory, 1.5 GB of disk
         (docs/synthetic-data.md, BENCHMARKS.md)

exit status: 0 written, 2 usage error (unknown scale, bad seed, OUT not empty without --force)

examples:
  tpugraphs synth data/demo --scale small --seed 0
  tpugraphs synth /tmp/tiny --scale tiny --force
  tpugraphs synth /data/fullscale --scale full --workers 2
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "synth", help=HELP, description=HELP + ".", epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("out", metavar="OUT", help="folder to write public/ and private/ into")
    parser.add_argument("--scale", default="small", choices=("tiny", "small", "full"),
                        help="size of the competition (default: small)")
    parser.add_argument("--seed", type=int, default=0, metavar="N", help="random seed, >= 0 (default: 0)")
    parser.add_argument("--workers", type=int, default=1, metavar="N",
                        help="processes making graphs at the same time (default: 1); the bytes do not "
                             "depend on it")
    parser.add_argument("--force", action="store_true",
                        help="write into a non-empty OUT, replacing OUT/public and OUT/private")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from competition.errors import UsageError

    out = Path(args.out)
    if args.seed < 0:
        raise UsageError(f"--seed must be >= 0, got {args.seed}")
    if args.workers < 1:
        raise UsageError(f"--workers must be >= 1, got {args.workers}")
    if out.exists() and not out.is_dir():
        raise UsageError(f"{out} exists and is not a folder")
    if out.is_dir() and any(out.iterdir()) and not args.force:
        raise UsageError(f"{out} is not empty; choose an empty folder or pass --force to replace "
                         f"{out / 'public'} and {out / 'private'}")

    from competition.data.synth import generate_competition

    summary = generate_competition(out, scale=args.scale, seed=args.seed, progress=args.scale != "tiny",
                                   overwrite=args.force, workers=args.workers)
    print(f"wrote the {summary.scale} synthetic competition (seed {summary.seed}) to {out} in "
          f"{summary.seconds:.1f} s: {summary.files} files, {summary.bytes / 1e6:.1f} MB")
    print(summary.table())
    print(f"\n  data (participants):  {summary.public_dir}")
    print(f"  labels (host only):   {summary.solution}")
    print("\nnext:")
    print(f"  tpugraphs validate {summary.sample_submission} --data {summary.public_dir}")
    print(f"  tpugraphs score {summary.sample_submission} --solution {summary.solution}")
    return 0
