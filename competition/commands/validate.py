"""``tpugraphs validate SUB.csv --data PUBLIC_DIR``: check a submission before spending a Kaggle slot."""

from __future__ import annotations

import argparse
import sys

from competition.commands._partial import add_collection_option

HELP = "check a submission file against the test graphs of a data directory"
EPILOG = """\
The IDs a submission must contain and each graph's number of configs are read from the test files of
--data (the Kaggle download folder, its npz_all/ folder, or an upstream npz/ folder). A partial
download, or a competition prepared from one, holds only some collections: name them with
--collection (repeatable) and the submission must then hold exactly the rows of those collections.

--json prints one JSON document on stdout: {"ok": true, "submission", "rows"} when valid, else
{"ok": false, "exit_code", "problems": [{"line", "id", "rule", "message"}], "problems_truncated"}.

exit status: 0 valid, 1 invalid (every problem listed, capped by --max-problems), 2 usage error

example:
  tpugraphs validate submission.csv --data data/demo/public
  tpugraphs validate tile_only.csv --data data/kaggle --collection tile:xla
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "validate", help=HELP, description=HELP + ".", epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("submission", metavar="SUB.csv", help="the submission file (ID,TopConfigs)")
    parser.add_argument("--data", required=True, metavar="PUBLIC_DIR",
                        help="data directory in the Kaggle layout (e.g. OUT/public from 'tpugraphs synth')")
    parser.add_argument("--max-problems", type=int, default=50, metavar="N",
                        help="stop listing after N problems (default: 50)")
    add_collection_option(parser, "--data")
    parser.add_argument("--json", action="store_true",
                        help="print one JSON document instead of text (keys above)")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    import json

    from competition.commands._partial import chosen_collections, explain_other_collections
    from competition.commands.arguments import SUBMISSION_FILE, require_file
    from competition.commands.json_problems import message_problem, problems_document, validation_problems
    from competition.data.graphs import expected_from_data_dir
    from competition.errors import DataFormatError, UsageError
    from competition.submission import format_problems, validate_submission

    submission = require_file(args.submission, SUBMISSION_FILE)
    chosen = chosen_collections(args.collections)
    try:
        expected = expected_from_data_dir(args.data, chosen)
    except FileNotFoundError as exc:
        raise UsageError(str(exc)) from None
    except DataFormatError as exc:
        print(f"tpugraphs validate: cannot read the test graphs: {exc}", file=sys.stderr)
        if args.json:
            print(problems_document([message_problem(f"cannot read the test graphs: {exc}")], 1))
        return 1
    result = validate_submission(submission, expected, max_problems=args.max_problems)
    if args.collections:
        result = explain_other_collections(result, chosen)
    if not result.ok:
        print(format_problems(result, source_name=str(submission)), file=sys.stderr)
        if args.json:
            print(problems_document(validation_problems(result), 1, truncated=result.problems_truncated))
        return 1
    if args.json:
        print(json.dumps({"ok": True, "submission": str(submission), "rows": len(result.rows)}))
        return 0
    where = args.data if args.collections is None else f"{', '.join(c.name for c in chosen)} in {args.data}"
    print(f"{submission}: valid submission ({len(result.rows)} rows, every test graph of {where})")
    return 0

