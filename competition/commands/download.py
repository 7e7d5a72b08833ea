"""``tpugraphs download --out DIR``: fetch the released data into the Kaggle tree."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

HELP = "download the competition data (from Kaggle or the upstream mirror) into the Kaggle layout"
EPILOG = """\
The data lands in DIR/npz_all/npz/<task>/<source>[/<search>]/<split>/, the tree of Kaggle's download,
so every other command takes DIR as it is (e.g. tpugraphs validate SUB.csv --data DIR).

--source kaggle (default) uses the 'kaggle' package (pip install 'kaggle>=1.6,!=2.2.5' six) and its
credentials: KAGGLE_API_TOKEN or ~/.kaggle/access_token, else KAGGLE_USERNAME/KAGGLE_KEY or kaggle.json
in ~/.kaggle (or $KAGGLE_CONFIG_DIR); accept the competition rules on kaggle.com first. It also
unpacks sample_submission.csv, and with --with-pb the raw protos (pb/) of the chosen collections and
splits into DIR/pb/<task>/<source>[/<search>]/<split>/*.pb (the same tree as the npz files), which
'tpugraphs featurize' turns into npz files of your own (see the examples and docs/featurizer.md).
--source mirror needs no account: one tar file per collection and split from --mirror-url. It
publishes only the npz files, so --with-pb needs --source kaggle.

Interrupted downloads leave DIR/.downloads/NAME.part; run the same command again to resume it.
Each archive is checked (size, full tar/zip listing) and unpacked into a temporary folder inside DIR
before its folders are renamed into place, so the tree never holds a half-unpacked split. Splits
(npz or pb) already in place are skipped (delete one to fetch it again); the Kaggle zip is fetched only
when one of those asked for is missing. The sha256 of each archive fetched is appended to
DIR/.downloads/SHA256SUMS; --sha256 FILE checks archives against your own list.

exit status: 0 done, 1 download failed (the message says why and what to do), 2 usage error

examples:
  tpugraphs download --out data/kaggle
  tpugraphs download --out data/tile --source mirror --collection tile:xla --split train valid
  # the raw protos too, then featurize them yourself (the output keeps the npz tree's shape):
  tpugraphs download --out data/kaggle --with-pb --collection layout:xla:random --split train
  tpugraphs featurize data/kaggle/pb/layout/xla/random/train --out data/mine/npz/layout/xla/random/train
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    from competition.collections import COLLECTION_NAMES, SPLITS

    parser = subparsers.add_parser(
        "download", help=HELP, description=HELP + ".", epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--out", required=True, metavar="DIR",
                        help="data directory to fill (created if needed)")
    parser.add_argument("--source", choices=("kaggle", "mirror"), default="kaggle",
                        help="where from (default: kaggle)")
    parser.add_argument("--collection", nargs="+", choices=COLLECTION_NAMES, metavar="C",
                        help=f"only these collections (default: all): {', '.join(COLLECTION_NAMES)}")
    parser.add_argument("--split", nargs="+", choices=SPLITS, metavar="S",
                        help=f"only these splits (default: all): {', '.join(SPLITS)}")
    parser.add_argument("--mirror-url", default=None, metavar="URL",
                        help="base URL of the tar files for --source mirror "
                             "(default: http://download.tensorflow.org/data/tpu_graphs/v0/)")
    parser.add_argument("--with-pb", action="store_true",
                        help="also unpack the raw protos of the chosen collections and splits into "
                             "DIR/pb/<task>/<source>[/<search>]/<split>/ (--source kaggle only)")
    parser.add_argument("--keep-archives", action="store_true",
                        help="keep the downloaded tar/zip files in DIR/.downloads (default: delete "
                             "after unpacking)")
    parser.add_argument("--sha256", metavar="FILE",
                        help="sha256sum-format list of archive checksums to check mirror downloads against")
    parser.add_argument("--timeout", type=float, default=60.0, metavar="S",
                        help="seconds to wait for the server before giving up (default: 60)")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from competition.collections import COLLECTION_BY_NAME
    from competition.data.remote.download import (
        DEFAULT_MIRROR_URL,
        MIRROR_HAS_NO_PROTOS,
        DownloadError,
        download_kaggle,
        download_mirror,
        read_sha256_manifest,
        select_parts,
    )
    from competition.data.tree import find_npz_root
    from competition.errors import UsageError

    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise UsageError(f"--out {out}: exists and is not a directory")
    if args.source == "kaggle" and (args.mirror_url or args.sha256):
        raise UsageError("--mirror-url and --sha256 apply to --source mirror only")
    if args.source == "mirror" and args.with_pb:
        raise UsageError(f"--with-pb needs --source kaggle: {MIRROR_HAS_NO_PROTOS}")
    if args.timeout <= 0:
        raise UsageError("--timeout must be positive")
    collections = [COLLECTION_BY_NAME[name] for name in args.collection] if args.collection else None
    parts = select_parts(collections, args.split)
    progress = True  # competition.progress: a bar on a terminal, a line every 30 s in a log
    existed = out.exists()
    try:
        if args.source == "mirror":
            expected = None
            if args.sha256:
                if not Path(args.sha256).is_file():
                    raise UsageError(f"--sha256 {args.sha256}: no such file")
                expected = read_sha256_manifest(Path(args.sha256))
            report = download_mirror(out, parts, mirror_url=args.mirror_url or DEFAULT_MIRROR_URL,
                                     keep_archives=args.keep_archives, expected_sha256=expected,
                                     timeout=args.timeout, progress=progress)
        else:
            report = download_kaggle(out, parts, keep_archives=args.keep_archives, with_pb=args.with_pb)
    except DownloadError as exc:
        _remove_if_empty(out / ".downloads", out if not existed else None)
        hint = ""
        if args.source == "kaggle":
            hint = ("; or use --source mirror (no account needed"
                    + (", npz files only)" if args.with_pb else ")"))
        print(f"tpugraphs download: {exc}{hint}", file=sys.stderr)
        return 1
    for part in report.already_present + report.pb_already_present:
        print(f"already present, skipped: {part.target(out)}", file=sys.stderr)
    print(f"Installed {len(report.installed)} collection splits under {find_npz_root(out)} "
          f"({len(report.already_present)} already present).")
    if args.with_pb:
        example = (report.pb_installed + report.pb_already_present)[0]
        featurized = out / "featurized" / "npz"
        print(f"Raw protos of {len(report.pb_installed)} collection splits unpacked under {out / 'pb'} "
              f"({len(report.pb_already_present)} already present). Turn them into npz files with, e.g.:\n"
              f"  tpugraphs featurize {example.target(out)} --out {featurized / example.member_dir}\n"
              f"  tpugraphs featurize {out / 'pb'} --out {featurized}    # everything under pb/, tree kept")
    return 0


def _remove_if_empty(*folders: Path | None) -> None:
    """Leave no empty folders behind a failed download (a .part file keeps its folder)."""
    for folder in folders:
        if folder is not None and folder.is_dir() and not any(folder.iterdir()):
            folder.rmdir()
