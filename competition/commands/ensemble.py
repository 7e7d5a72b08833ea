"""``tpugraphs ensemble A.csv B.csv ... --out E.csv``: blend submissions by their rankings."""

from __future__ import annotations

import argparse

from competition.commands import _statistics as common

HELP = "blend submissions per graph by their rankings (rank-mean or borda) into a valid submission"
EPILOG = """\
Every input is validated; they must cover the same IDs (the command names the ones that differ).
Layout rows: the blended rank of every config. Tile rows: the blend of the listed top 5, written as
the 5 best of the blend. rank-mean orders configs by their weighted mean position (a tile config an
input did not list counts as ranked below its list); borda gives m - position points per list. Both
agree on layout rows. The config counts come from --data (the test files), else from --solution;
without either they are inferred from the inputs. With --solution, the inputs and the blend are also
scored (with --data too, both must describe the same test graphs).

JSON keys: out, method, rows, counts_from, inputs [{submission, weight}], scores (null without
--solution).

exit status: 0 written, 1 an input is invalid or the inputs cover different IDs, 2 usage error

examples:
  tpugraphs ensemble seed0.csv seed1.csv seed2.csv --out ensemble.csv --data data/demo/public
  tpugraphs ensemble seed0.csv seed1.csv --out ensemble.csv --data data/demo/public \
    --solution data/demo/private/solution.csv
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("ensemble", help=HELP, description=HELP + ".", epilog=EPILOG,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("submissions", nargs="+", metavar="SUB.csv", help="two or more submission files")
    parser.add_argument("--out", required=True, metavar="E.csv", help="the blended submission to write")
    parser.add_argument("--weights", metavar="W1,W2,...",
                        help="one positive weight per input (default: all 1)")
    parser.add_argument("--method", choices=("rank-mean", "borda"), default="rank-mean",
                        help="how rankings are combined (default: rank-mean)")
    parser.add_argument("--data", metavar="PUBLIC_DIR", help="test files giving the IDs and config counts")
    common.add_solution(parser, required=False)  # scores the inputs and the blend (epilog)
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of the summary")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    def body() -> int:
        import json
        from pathlib import Path

        from competition.errors import DataFormatError, UsageError
        from competition.scoring import score_submission
        from competition.stats.ensemble import EnsembleError, ensemble_files, parse_weights

        if len(args.submissions) < 2:
            raise UsageError("an ensemble needs at least 2 submissions")
        common.check_files(args.submissions, args.solution)
        out = Path(args.out)
        if out.is_dir():
            raise UsageError(f"{out} is a folder; --out names the file to write")
        if any(out.resolve() == Path(p).resolve() for p in args.submissions):
            raise UsageError(f"--out {out} is one of the inputs; write the blend to a new file")
        try:
            weights = parse_weights(args.weights, len(args.submissions))
        except EnsembleError as exc:
            raise UsageError(str(exc)) from None
        solution, expected, counts_from = None, None, "inferred"
        if args.data:
            from competition.data.graphs import expected_from_data_dir

            try:
                expected, counts_from = expected_from_data_dir(args.data), "data"
            except FileNotFoundError as exc:
                raise UsageError(str(exc)) from None
            except DataFormatError as exc:
                raise common.InputRejected(f"cannot read the test graphs: {exc}") from None
        if args.solution:
            solution = common.load_solution_or_fail(args.solution)
            if expected is None:
                expected, counts_from = solution.expected_configs(), "solution"
            else:
                _check_agreement(expected, solution.expected_configs(), args.data, args.solution)
        try:
            result = ensemble_files(args.submissions, out, weights=weights, method=args.method,
                                    expected=expected, counts_from=counts_from)
        except EnsembleError as exc:
            raise common.InputRejected(str(exc)) from None
        if solution is not None:
            for path in [*args.submissions, str(result.out)]:
                result.scores[path] = score_submission(path, solution).score
        print(json.dumps(result.to_json_dict()) if args.json else result.format())
        return 0

    return common.run_guarded("ensemble", body, as_json=args.json)


def _check_agreement(from_data: dict[str, int], from_solution: dict[str, int], data: str,
                     solution: str) -> None:
    """--data and --solution must describe the same test graphs: the blend is written for one and
    scored against the other."""
    differ = sorted(set(from_data) ^ set(from_solution))
    counts = sorted(i for i in set(from_data) & set(from_solution) if from_data[i] != from_solution[i])
    if differ or counts:
        shown = ", ".join((differ or counts)[:3])
        what = "IDs" if differ else "config counts"
        raise common.InputRejected(f"--data {data} and --solution {solution} are not the same test graphs: "
                                   f"{len(differ or counts)} {what} differ, e.g. {shown}")

