"""``tpugraphs inspect FILE.npz [--json]``: what a graph file holds, in bounded memory."""

from __future__ import annotations

import argparse
import sys

HELP = "summarise npz graph files: nodes, edges, configs, distinct configs, runtime spread, memory"
EPILOG = """\
Sizes are read from the array headers and the config tensor is streamed in chunks, so even the
872 MB config tensor of the largest nlp graph is inspected in little memory. Distinct configs are
counted exactly (identical config rows, i.e. identical node_config_feat / config_feat). Test files
have every runtime set to 0: the runtime spread then reads "hidden".

--json prints one JSON document: {"ok", "exit_code", "files": [...], "problems": [...]}, one object
per readable file with the keys path, kind, nodes, edges, configs, configurable_nodes (null for
tile), distinct_configs, runtime_min, runtime_max, runtime_ratio, runtime_hidden, memory_bytes,
compressed, arrays, and one problem {"line", "id" (the file), "rule", "message"} per unreadable file.

exit status: 0 ok, 1 a file is not a readable graph (named), 2 usage error

examples:
  tpugraphs inspect npz/layout/nlp/random/train/albert_en_base_train_batch_size_16_-65bf4a2e8b2a8394.npz
  tpugraphs inspect data/demo/public/npz_all/npz/tile/xla/test/*.npz --json
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "inspect",
        help=HELP,
        description=HELP + ".",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("files", nargs="+", metavar="FILE.npz", help="npz graph files (tile or layout)")
    parser.add_argument("--json", action="store_true",
                        help='print one JSON document instead of text: {"files": [one object per '
                             'file], "problems"}')
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    import json

    from competition.commands.arguments import require_file
    from competition.data.inspection import format_summary, inspect_npz
    from competition.errors import DataFormatError

    paths = [require_file(name, "an .npz graph file", suffix=".npz") for name in args.files]
    failures, records = [], []
    for i, path in enumerate(paths):
        try:
            summary = inspect_npz(path)
        except DataFormatError as exc:
            print(f"tpugraphs inspect: {exc}", file=sys.stderr)
            failures.append({"line": None, "id": str(path), "rule": None, "message": str(exc)})
            continue
        if args.json:
            records.append(summary.to_dict())
        else:
            print(("\n" if i else "") + format_summary(summary))
    if args.json:
        print(json.dumps({"ok": not failures, "exit_code": 1 if failures else 0, "files": records,
                          "problems": failures}))
    return 1 if failures else 0
