"""``tpugraphs cache --data DIR --out CACHE``: build the processed cache of the layout graphs ahead of
time."""

from __future__ import annotations

import argparse
import sys

HELP = "build the memory-mapped cache of layout graphs that 'tpugraphs solve --cache-dir' reads"
EPILOG = """\
Each layout npz is converted once into CACHE/<task>/<source>/<search>/<split>/<stem>/: the small
arrays as .npy files and node_config_feat as an uncompressed (c, nc, 18) int8 array that is memory-
mapped when read, so sampled configs are read without decompressing the file (see
competition/data/processed_cache.py). The conversion streams the npz, so even the 872 MB config
tensor of the largest nlp graph never sits in memory. 'tpugraphs solve --cache-dir CACHE' builds
missing caches on its own; this command builds them up front (e.g. before a series of runs) and says
how much disk they take.

A cache is reused while its npz is unchanged (same path, size and modification time) and rebuilt
otherwise; --force rebuilds every one. A file that cannot be read is named and skipped (the other
files are still cached) and leaves no cache behind. Tile graphs are not cached: each file is a few MB.

exit status: 0 every file cached, 1 a file could not be read (each named), 2 usage error

examples:
  tpugraphs cache --data data/kaggle --out data/cache
  tpugraphs cache --data data/kaggle --out data/cache --collection layout:nlp:random --split train valid
  tpugraphs solve --data data/kaggle --out sub.csv --collection layout:nlp:random --cache-dir data/cache
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    from competition.collections import SPLITS

    parser = subparsers.add_parser(
        "cache", help=HELP, description=HELP + ".", epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--data", required=True, metavar="DIR", help="data directory in the Kaggle layout")
    parser.add_argument("--out", required=True, metavar="CACHE", help="cache folder (created if needed)")
    parser.add_argument("--collection", nargs="+", metavar="C",
                        help="only these collections (default: every one whose configs are per node, the "
                             "layout ones)")
    parser.add_argument("--split", nargs="+", choices=SPLITS, metavar="S",
                        help=f"only these splits (default: every split present): {', '.join(SPLITS)}")
    parser.add_argument("--force", action="store_true", help="rebuild caches that are still fresh")
    parser.add_argument("--quiet", action="store_true", help="no progress bars")
    parser.set_defaults(handler=run)


def _chosen_collections(names: list[str] | None):
    from competition.collections import COLLECTIONS
    from competition.data.processed_cache import layout_collection
    from competition.errors import UsageError

    if not names:
        return [c for c in COLLECTIONS if c.task.cached]
    chosen = []
    for name in names:
        try:
            chosen.append(layout_collection(name))
        except ValueError as exc:  # unknown, or a tile collection
            raise UsageError(f"{exc}; choose layout collections") from None
    return [c for c in COLLECTIONS if c in chosen]


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from competition.collections import SPLITS
    from competition.data.graphs import list_split
    from competition.data.locate import resolve_data_dir
    from competition.data.processed_cache import CONFIGS_NAME, build_cache, is_fresh, split_cache_dir
    from competition.data.tree import split_dir
    from competition.errors import DataFormatError, UsageError
    from competition.progress import progress

    try:
        data = resolve_data_dir(args.data, "--data")
    except FileNotFoundError as exc:
        raise UsageError(str(exc)) from None
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise UsageError(f"--out {out}: exists and is not a folder")
    collections = _chosen_collections(args.collection)
    splits = args.split or list(SPLITS)
    work = []
    for collection in collections:
        for split in splits:
            folder = split_dir(data, collection, split)
            if folder.is_dir():
                work.append((collection, split, list_split(data, collection, split)))
            elif args.split:
                raise UsageError(f"{folder}: no such folder ({collection.name} {split} was asked for)")
    if not work:
        raise UsageError(f"{data}: holds no layout graphs of the chosen collections "
                         "(expected npz_all/npz/layout/<source>/<search>/<split>/*.npz)")

    failures, rows = 0, []
    for collection, split, paths in work:
        target = split_cache_dir(out, collection, split)
        built = reused = configs = size = 0
        for path in progress(paths, desc=f"cache {collection.name} {split}", unit="graph",
                             enabled=not args.quiet):
            cache_dir = target / path.stem
            fresh = not args.force and is_fresh(cache_dir, path)
            try:
                graph = build_cache(path, cache_dir, force=args.force)
            except DataFormatError as exc:
                from tqdm import tqdm

                tqdm.write(f"tpugraphs cache: {exc}", file=sys.stderr)  # above a terminal bar, which redraws
                failures += 1
                continue
            except OSError as exc:  # e.g. the disk filled up: the half-built cache was removed
                print(f"tpugraphs cache: cannot write {exc.filename or cache_dir}: {exc.strerror or exc}",
                      file=sys.stderr)
                return 1
            reused, built = reused + fresh, built + (not fresh)
            configs += graph.num_configs
            size += sum(f.stat().st_size for f in cache_dir.iterdir())
        rows.append((collection.name, split, len(paths), built, reused, configs, size))

    print(f"{'collection':<20} {'split':<6} {'graphs':>6} {'built':>6} {'reused':>6} {'configs':>10} "
          f"{'disk MB':>8}")
    for name, split, graphs, built, reused, configs, size in rows:
        print(f"{name:<20} {split:<6} {graphs:>6} {built:>6} {reused:>6} {configs:>10,} {size / 2**20:>8.0f}")
    total = sum(row[-1] for row in rows)
    print(f"cache in {out} ({total / 2**20:,.0f} MB; configs in {CONFIGS_NAME}); use it with "
          f"'tpugraphs solve --data {data} --cache-dir {out} ...'")
    if failures:
        print(f"tpugraphs cache: {failures} file(s) could not be read (named above); the others are cached",
              file=sys.stderr)
    return 1 if failures else 0
