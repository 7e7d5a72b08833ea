"""``tpugraphs featurize FILE.pb ... --out DIR``: raw tuning protos -> npz graphs (no TensorFlow)."""

from __future__ import annotations

import argparse
import sys

HELP = "turn raw TpuGraphs tuning protos (.pb) into npz graphs, like the released files"
EPILOG = """\
Each FILE is a TuningData proto (tile kernels: one npz per kernel, named <stem>_<fingerprint>) or a
ModuleTuningData proto (a layout graph: one npz named <stem>); the type is detected from the bytes
unless --kind says it. A folder is searched for *.pb files and its sub-folders are kept under --out,
so the dataset's raw pb/ tree turns into the npz/ tree. Configs keep proto order (the released
files were shuffled). Rules: docs/featurizer.md.

exit status: 0 every file featurized, 1 a file could not be read (each problem named, the other
files are still written), 2 usage error

examples:
  tpugraphs featurize my_module.pb --out npz/layout/xla/random/train
  tpugraphs featurize pb/tile/xla/train --out npz/tile/xla/train --kind tile
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "featurize",
        help=HELP,
        description=HELP + ".",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "files", nargs="+", metavar="FILE.pb", help="proto files, or folders holding *.pb files"
    )
    parser.add_argument(
        "--out", required=True, metavar="DIR", help="folder for the npz files (created if needed)"
    )
    parser.add_argument(
        "--kind", choices=("tile", "layout"), help="message type of every FILE (default: detect per file)"
    )
    parser.add_argument(
        "--stored",
        action="store_true",
        help="write uncompressed npz (faster to read, larger; default: compressed)",
    )
    parser.add_argument(
        "-v", "--verbose", action="store_true", help="a line per tile kernel and per kernel left out"
    )
    parser.set_defaults(handler=run)


def _inputs(args: argparse.Namespace):
    """``(proto file, output folder)`` pairs; folders are walked and their sub-folders kept."""
    from pathlib import Path

    from competition.errors import UsageError

    out_root = Path(args.out)
    pairs = []
    for name in args.files:
        path = Path(name)
        if path.is_dir():
            found = sorted(path.rglob("*.pb"))
            if not found:
                raise UsageError(f"{path}: folder holds no *.pb files")
            pairs.extend((pb, out_root / pb.parent.relative_to(path)) for pb in found)
        elif path.is_file():
            pairs.append((path, out_root))
        else:
            raise UsageError(f"{path}: no such file or folder")
    return pairs


def _span(values: list[int]) -> str:
    low, high = min(values), max(values)
    return f"{low:,}" if low == high else f"{low:,}-{high:,}"


def run(args: argparse.Namespace) -> int:
    from competition.data.graphs import save_graph
    from competition.data.protos.featurize import featurize_proto
    from competition.errors import DataFormatError

    failures = 0
    written = 0
    for pb, out_dir in _inputs(args):
        try:
            result = featurize_proto(pb, kind=args.kind)
        except DataFormatError as exc:
            print(f"tpugraphs featurize: {exc}", file=sys.stderr)
            failures += 1
            continue
        for name, graph in result.graphs:
            save_graph(graph, out_dir / f"{name}.npz", compressed=not args.stored)
            written += 1
        graphs = [g for _, g in result.graphs]
        if not result.format.many:  # one program per file (layout)
            graph = graphs[0]
            note = (
                "" if graph.num_configs else " (no usable default run: every run dropped, as upstream does)"
            )
            print(
                f"{pb}: layout graph -> {out_dir / (result.graphs[0][0] + '.npz')}: "
                f"{graph.num_nodes:,} nodes, "
                f"{graph.num_edges:,} edges, {graph.num_configs:,} configs, "
                f"{graph.num_configurable_nodes:,} configurable nodes{note}"
            )
        elif graphs:
            print(
                f"{pb}: {len(graphs)} tile kernels -> {out_dir}: "
                f"{_span([g.num_nodes for g in graphs])} nodes, "
                f"{_span([g.num_edges for g in graphs])} edges, "
                f"{_span([g.num_configs for g in graphs])} configs"
                f"{f', {len(result.skipped)} kernels left out' if result.skipped else ''}"
            )
        else:
            print(f"{pb}: no tile kernel to featurize ({len(result.skipped)} left out)")
        if args.verbose:
            for name, graph in result.graphs if result.format.many else []:
                print(
                    f"  {name}: {graph.num_nodes} nodes, {graph.num_edges} edges, {graph.num_configs} configs"
                )
            for line in result.skipped:
                print(f"  left out {line}")
    if failures:
        print(
            f"tpugraphs featurize: {failures} file(s) could not be featurized; {written} npz written",
            file=sys.stderr,
        )
        return 1
    return 0
