"""``tpugraphs rank PROGRAM --model MODEL_DIR``: which layout configurations a saved model picks for a program."""

from __future__ import annotations

import argparse
import sys

from competition.commands._statistics import positive_int

HELP = "rank the layout configurations of your own XLA program with a model saved by 'tpugraphs solve'"
EPILOG = """\
PROGRAM is a ModuleTuningData proto (the HLO module with the nodes the TPU compiler lets you configure,
config_index_to_node; its measured runs are optional) or a layout npz of the released format.
Candidates: the program's measured configs (default), --configs FILE (a layout npz's node_config_feat,
or a .npy of shape (configs, nodes, 18)), or --sample N: N distinct configs drawn as the dataset's
random search draws them (each layout group picks a setting of its menu: the settings its nodes take
in the program's configs, or --configs, and the two minor-most dims swapped). The model is the one a
'tpugraphs solve' run saved in MODEL_DIR for --collection (a seed ensemble is blended as solve does),
so the ranking of a program's configs equals what 'solve --predict-only' writes for the same graph.

The table lists the K best: predicted rank, candidate index, the model's score (lower = predicted
faster; a ranking score, not a runtime) and what the config changes against the program's default
layout (the proto's default run), or each node's most common setting when the program has none.
A plain HLO module proto (--xla_dump_hlo_as_proto) and tile kernels are not supported: the
configurable nodes and their menus come from the TPU compiler's autotuner (docs/rank.md).

JSON keys: program, model {method, collection, dir, models}, candidates, candidate_source, reference,
top [{rank, candidate, predicted_score (null for a seed ensemble), predicted_relative_runtime (null:
the models' scores are not runtimes), config, changes [{node, opcode, tensor, from, to}]}].

exit status: 0 ranked, 1 an unreadable or foreign program or configs file, 2 usage error (no saved
model for the collection, bad options)

examples:
  tpugraphs solve --method gbdt --collection layout:xla:random --data data/demo/public --out sub.csv
  tpugraphs rank module_tuning_data.pb --model sub.models --top 5
  tpugraphs rank my_program.npz --model sub.models --sample 1000 --json
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("rank", help=HELP, description=HELP + ".", epilog=EPILOG,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("program", metavar="PROGRAM", help="a ModuleTuningData .pb or a layout .npz")
    parser.add_argument("--model", required=True, metavar="MODEL_DIR",
                        help="the --model-dir of a 'tpugraphs solve' run (default there: SUB.models)")
    parser.add_argument("--collection", default="layout:xla:random", metavar="NAME",
                        help="whose saved model ranks the configs (default: layout:xla:random)")
    candidates = parser.add_mutually_exclusive_group()
    candidates.add_argument("--configs", metavar="FILE", help="candidate configs: a layout .npz or a .npy")
    candidates.add_argument("--sample", type=positive_int, metavar="N",
                            help="sample N distinct configs as the dataset's random search does")
    parser.add_argument("--seed", type=int, default=0, metavar="N", help="seed of --sample (default: 0)")
    parser.add_argument("--top", type=positive_int, default=10, metavar="K", help="list the K best (default: 10)")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    import json

    from competition.errors import UsageError
    from solutions.ranking import RankError, rank_program, read_configs, read_program, sample_layout_configs

    try:
        program = read_program(args.program)
        configs, source = None, ""
        if args.configs:
            configs = read_configs(args.configs, program.graph.num_configurable_nodes)
            source = f"from {args.configs}"
        if args.sample:
            base = program.graph.node_config_feat
            if len(base) == 0:
                raise RankError(f"{args.program}: --sample draws from the settings the program's measured "
                                "configs take, and it has none; give --configs FILE")
            configs = sample_layout_configs(base, args.sample, seed=args.seed)
            source = f"sampled, seed {args.seed}"
    except RankError as exc:
        print(f"tpugraphs rank: {exc}", file=sys.stderr)
        if args.json:  # --json: stdout still carries one document
            from competition.commands._json import message_problem, problems_document

            print(problems_document([message_problem(str(exc))], 1))
        return 1
    try:
        result = rank_program(program, args.model, collection=args.collection, configs=configs,
                              candidate_source=source, top=args.top)
    except (RankError, ValueError) as exc:
        raise UsageError(str(exc)) from None
    print(json.dumps(result.to_json_dict()) if args.json else result.format())
    return 0
