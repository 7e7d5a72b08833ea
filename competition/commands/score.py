"""``tpugraphs score SUB.csv --solution SOLUTION.csv [--json]``: the official metric, locally."""

from __future__ import annotations

import argparse
import sys

from competition.commands._partial import add_collection_option

HELP = "validate a submission against a solution file and print its score"
EPILOG = """\
The solution file holds the hidden labels (ID,Runtimes,Normalizers,Usage), e.g. OUT/private/solution.csv
written by 'tpugraphs synth'. The submission is validated first with the same rules as
'tpugraphs validate'. The score is the unweighted mean of the five collection scores; 'public' and
'private' use only the rows of that Usage, 'score' both; a figure with no rows to average (a
solution without Private rows, say) is null in --json and '-' in the table, never 0.0. --collection
(repeatable) scores only those collections of the solution; the submission must then hold exactly
their rows. --json prints one JSON document on stdout with the table's figures when scored: {"score",
"public", "private", "collections", "public_collections", "private_collections", "graphs", "metrics"}
(each of the last five maps a collection to its all / public / private score, its {"public",
"private"} graph counts, its metric); else {"ok": false, "exit_code", "problems": [{"line", "id",
"rule", "message"}], "problems_truncated"} (the exit status is the same either way).

exit status: 0 scored, 1 invalid submission or unreadable solution, 2 usage error

examples:
  tpugraphs score submission.csv --solution data/demo/private/solution.csv
  tpugraphs score submission.csv --solution data/demo/private/solution.csv --json
  tpugraphs score tile_only.csv --solution my_comp/private/solution.csv --collection tile:xla
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "score", help=HELP, description=HELP + ".", epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("submission", metavar="SUB.csv", help="the submission file (ID,TopConfigs)")
    parser.add_argument("--solution", required=True, metavar="SOLUTION.csv", help="hidden labels")
    parser.add_argument("--json", action="store_true",
                        help="print one JSON object with the table's figures (keys below)")
    parser.add_argument("--max-problems", type=int, default=50, metavar="N",
                        help="stop listing problems after N (default: 50)")
    add_collection_option(parser, "the solution")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    import json

    from competition.commands._partial import chosen_collections, explain_other_collections, names
    from competition.commands.arguments import SOLUTION_FILE, SUBMISSION_FILE, require_file
    from competition.commands.json_problems import message_problem, problems_document, validation_problems
    from competition.errors import SolutionFormatError, UsageError
    from competition.scoring import Solution, format_report, load_solution, score_rows
    from competition.submission import format_problems, validate_submission

    require_file(args.submission, SUBMISSION_FILE)
    require_file(args.solution, SOLUTION_FILE)
    try:
        solution = load_solution(args.solution)
    except SolutionFormatError as exc:
        print(f"tpugraphs score: unusable solution file: {exc}", file=sys.stderr)
        if args.json:
            print(problems_document([message_problem(f"unusable solution file: {exc}")], 1))
        return 1
    chosen = chosen_collections(args.collections)
    if args.collections:
        absent = [c for c in chosen if c.name not in solution.labels]
        if absent:
            raise UsageError(f"{args.solution} has no rows of {names(absent)}; it holds rows of: "
                             f"{names(solution.labels)}")
        solution = Solution({c.name: solution.labels[c.name] for c in chosen}, source=solution.source)
    result = validate_submission(args.submission, solution.expected_configs(), max_problems=args.max_problems)
    if not result.ok:
        scored = tuple(c for c in chosen if c.name in solution.labels)
        why = "--collection" if args.collections else "the solution has rows of no other collection"
        result = explain_other_collections(result, scored, why=why)
        print(format_problems(result, source_name=str(args.submission)), file=sys.stderr)
        if args.json:
            print(problems_document(validation_problems(result), 1, truncated=result.problems_truncated))
        return 1
    report = score_rows(result.rows, solution)
    if args.json:
        print(json.dumps(report.to_json_dict()))
    else:
        print(format_report(report))
    return 0
