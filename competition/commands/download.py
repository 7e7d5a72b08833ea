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
unpacks sample_submission.csv; the raw protos (pb/) are not unpacked.
--source mirror needs no account: one tar file per collection and split from --mirror-url.

Interrupted downloads leave DIR/.downloads/NAME.part; run the same command again to resume it.
Each archive is checked (size, full tar/zip listing) and unpacked into a temporary folder inside DIR
before its folders are renamed into place, so the tree never holds a half-unpacked split. Splits
already in place are skipped (delete one to fetch it again). The sha256 of each archive fetched is
appended to DIR/.downloads/SHA256SUMS; --sha256 FILE checks archives against your own list.

exit status: 0 done, 1 download failed (the message says why and what to do), 2 usage error

examples:
  tpugraphs download --out data/kaggle
  tpugraphs download --out data/tile --source mirror --collection tile:xla --split train valid
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    from competition.collections import COLLECTION_NAMES, SPLITS

    parser = subparsers.add_parser(
        "download", help=HELP, description=HELP + ".", epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--out", required=True, metavar="DIR", help="data directory to fill (created if needed)")
    parser.add_argument("--source", choices=("kaggle", "mirror"), default="kaggle",
                        help="where from (default: kaggle)")
    parser.add_argument("--collection", nargs="+", choices=COLLECTION_NAMES, metavar="C",
                        help=f"only these collections (default: all): {', '.join(COLLECTION_NAMES)}")
    parser.add_argument("--split", nargs="+", choices=SPLITS, metavar="S",
                        help=f"only these splits (default: all): {', '.join(SPLITS)}")
    parser.add_argument("--mirror-url", default=None, metavar="URL",
                        help="base URL of the tar files for --source mirror "
                             "(default: http://download.tensorflow.org/data/tpu_graphs/v0/)")
    parser.add_argument("--keep-archives", action="store_true",
                        help="keep the downloaded tar/zip files in DIR/.downloads (default: delete after unpacking)")
    parser.add_argument("--sha256", metavar="FILE",
                        help="sha256sum-format list of archive checksums to check mirror downloads against")
    parser.add_argument("--timeout", type=float, default=60.0, metavar="S",
                        help="seconds to wait for the server before giving up (default: 60)")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from competition.cli import UsageError
    from competition.collections import COLLECTION_BY_NAME, find_npz_root
    from competition.download import (
        DEFAULT_MIRROR_URL,
        DownloadError,
        download_kaggle,
        download_mirror,
        read_sha256_manifest,
        select_parts,
    )

    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise UsageError(f"--out {out}: exists and is not a directory")
    if args.source == "kaggle" and (args.mirror_url or args.sha256):
        raise UsageError("--mirror-url and --sha256 apply to --source mirror only")
    if args.timeout <= 0:
        raise UsageError("--timeout must be positive")
    collections = [COLLECTION_BY_NAME[name] for name in args.collection] if args.collection else None
    parts = select_parts(collections, args.split)
    progress = sys.stderr.isatty()
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
            report = download_kaggle(out, parts, keep_archives=args.keep_archives)
    except DownloadError as exc:
        _remove_if_empty(out / ".downloads", out if not existed else None)
        hint = "; or use --source mirror (no account needed)" if args.source == "kaggle" else ""
        print(f"tpugraphs download: {exc}{hint}", file=sys.stderr)
        return 1
    for part in report.already_present:
        print(f"already present, skipped: {part.target(out)}", file=sys.stderr)
    print(f"Installed {len(report.installed)} collection splits under {find_npz_root(out)} "
          f"({len(report.already_present)} already present).")
    return 0


def _remove_if_empty(*folders: Path | None) -> None:
    """Leave no empty folders behind a failed download (a .part file keeps its folder)."""
    for folder in folders:
        if folder is not None and folder.is_dir() and not any(folder.iterdir()):
            folder.rmdir()
