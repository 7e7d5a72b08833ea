"""``tpugraphs rank PROGRAM --model MODEL_DIR``: which configurations a saved model picks for a program."""

from __future__ import annotations

import argparse
import sys

from competition.commands.arguments import positive_int

HELP = "rank the layout or tile configurations of your own XLA program with a model 'tpugraphs solve' saved"
EPILOG = """\
PROGRAM is one of:
  - a plain HLO module: an HloProto as XLA writes it with XLA_FLAGS="--xla_dump_to=DIR
    --xla_dump_hlo_as_proto" (*.before_optimizations.hlo.pb), or an HloModuleProto. Its configurable
    nodes are found by the dataset's rule: every convolution, dot and reshape, in node order. It has no
    measured configs: --sample N draws candidates from its layout space. A module after XLA's
    optimizations (named so, or scheduled) is refused, naming the before_optimizations file to use;
  - a dump folder (--xla_dump_to=DIR): its before_optimizations modules are listed with their
    instruction counts; --module NAME ranks one (its name, e.g. jit_loss, or its module_NNNN);
  - a ModuleTuningData proto (a layout program with the compiler's config_index_to_node; its measured
    runs are optional) or a layout npz of the released format;
  - a tile kernel: a tile npz of the released format, or a TuningData proto (--kernel NAME picks one of
    its kernels; tpugraphs featurize names them <stem>_<fingerprint>). A plain module is read as a tile
    kernel with --collection tile:xla.
Candidates: the program's measured configs (default); --configs FILE (an npz of the released format,
its node_config_feat or config_feat, or a .npy of shape (configs, nodes, 18) for layout, (configs, 24)
for tile), every config checked against the program (a layout: each tensor's dims exist, none twice,
only the slots the dataset sets: the 2 minor-most dims of a convolution's or dot's tensors, the whole
order of a reshape's); --sample N (layout only): N distinct configs, drawn from the settings of the
configs at hand (--configs FILE, else the measured ones) or, for a program without configs, from its
layout space (each tensor's valid orders, uniformly; docs/rank.md). A sample always holds the reference
(the default run, else the program's own layouts), added as candidate 0 when the draw missed it. Tile
configs cannot be sampled: the tile sizes a kernel may take come from the compiler's search, which no
public rule reproduces.
The model is the one a 'tpugraphs solve' run saved in MODEL_DIR for --collection; without it:
layout:xla:random (tile:xla for a tile kernel) when saved there, else the folder's only model of the
program's kind, or the one whose collection the program's path names (.../layout/xla/default/...). A
seed ensemble is blended as solve does, so the ranking of a program's configs equals what
'solve --predict-only' writes for the same graph. --model given more than once: the candidates are
ranked by the blend of the folders' scores (each a z-score over the candidates), and the answer says
how far the models agree (Kendall tau between their orders, overlap of their top K; a plain sentence).

The table lists the K best: predicted rank, candidate index, the score (lower = predicted faster; a
ranking score, not a runtime), for measured configs their measured rank, and what the config changes
against the reference, in the program's words: the instruction, the tensor's shape, the new
minor-to-major order by dimension names (N, H, W, C; I, O; B, M, K, N from the instruction's dimension
numbers; d<i>=<size> otherwise) and [file:line] where the instruction came from (its metadata; a
program without metadata says so). Above it: the reference's score and rank, and for measured configs
the model's Kendall tau against their runtimes.
--explain [K] takes candidate K (default: the best; the next best when the reference is best) apart:
each change applied alone to the reference and scored, by predicted gain, with its share of the
candidate's gain, and the greedy smallest set reaching 90 % of it. --write FILE writes the program's
module with the best candidate's layouts set (with --explain: the minimal set's), every other byte as
read; a change falling on a tensor already written differently is listed as not written.

JSON keys: program, task, format (npz, ModuleTuningData, TuningData, HloProto or HloModuleProto),
kernel (TuningData only), configurable_nodes (layout: their node positions), model {method, collection,
dir, models, chosen_because} (the first folder), models [the same, per folder], score_unit, candidates,
candidate_source, reference, reference_row {candidate, rank, added, score}, warnings, measured_kendall_tau,
agreement (null for one folder; {pairs [{models, kendall_tau, top_k, top_k_common, top_k_overlap}],
reference_ranks, agree, sentence, thresholds}), top [{rank, candidate, predicted_score (null for one
folder's seed ensemble), predicted_relative_runtime (always null: scores are not runtimes),
measured_rank, config, changes [{node, instruction, opcode, tensor, shape, dims, from, to, text,
computation, source {file, line, op_name}, where} for layout; {tensor, from, to, text} for tile]}],
explain ([{instruction, opcode, tensor, shape, from, to, predicted_score, predicted_gain, share,
in_minimal_set, source, text, node}], best first), explain_summary {candidate, rank, reference_score,
candidate_score, predicted_gain, target_share, minimal_set_size, minimal_set_score, minimal_set_share,
reached, changes}, written {file, config, written [{instruction, node, minor_to_major, text, note}],
skipped [{text, why}]}.

exit status: 0 ranked, 1 an unreadable, foreign or optimized program, 2 usage error (candidates
refused or missing, no saved model for the collection, a collection of the other kind, --sample for a
tile kernel, a dump folder without --module, --explain or --write that cannot be done, bad options)

examples:
  tpugraphs solve --method gbdt --collection layout:xla:random --data data/demo/public --out sub.csv
  tpugraphs rank dump/ --module jit_loss --model sub.models --sample 1000 --explain --write best.hlo.pb
  tpugraphs rank module_0014.jit__lambda.before_optimizations.hlo.pb --model gbdt.models \\
      --model gnn.models --sample 1000
  tpugraphs rank module_tuning_data.pb --model sub.models --top 5
  tpugraphs rank module_0001.jit_f.before_optimizations.hlo.pb --model sub.models --configs cands.npy
  tpugraphs rank op_tuning_data.pb --kernel op_tuning_data_4ae805e53b8d2b8a --model tile.models
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("rank", help=HELP, description=HELP + ".", epilog=EPILOG,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("program", metavar="PROGRAM",
                        help="an HLO module (.hlo.pb), a ModuleTuningData or TuningData .pb, or an .npz")
    parser.add_argument("--model", required=True, metavar="MODEL_DIR", action="append",
                        help="the --model-dir of a 'tpugraphs solve' run (default there: SUB.models); give "
                             "it more than once to rank by several models' blend and see how far they agree")
    parser.add_argument("--module", metavar="NAME",
                        help="PROGRAM is a dump folder: the module to rank (jit_loss, or its module_NNNN)")
    parser.add_argument("--collection", metavar="NAME",
                        help="whose saved model ranks the configs (default: layout:xla:random, or tile:xla "
                             "for a tile kernel, when saved there; else the folder's only one of that kind)")
    parser.add_argument("--kernel", metavar="NAME", help="the kernel of a TuningData proto to rank")
    parser.add_argument("--configs", metavar="FILE", help="candidate configs (.npz or .npy), each checked")
    parser.add_argument("--sample", type=positive_int, metavar="N",
                        help="layout: N distinct valid configs (see below)")
    parser.add_argument("--seed", type=int, default=0, metavar="N", help="seed of --sample (default: 0)")
    parser.add_argument("--top", type=positive_int, default=10, metavar="K",
                        help="list the K best (default: 10)")
    parser.add_argument("--explain", nargs="?", const=BEST, type=_candidate, metavar="K",
                        help="take candidate K (default: the best) apart: each change alone, its share of "
                             "the predicted gain, the smallest set reaching 90%%")
    parser.add_argument("--write", metavar="FILE",
                        help="write the module with the best candidate's layouts set (with --explain: its "
                             "minimal set's), every other byte as read")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
    parser.set_defaults(handler=run)


BEST = -1  # --explain without K: the best candidate


def _candidate(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"a candidate index is >= 0, got {value}")
    return value


def run(args: argparse.Namespace) -> int:
    import json

    from competition.collections import get_collection
    from competition.errors import UsageError
    from solutions.rank.ranking import DumpChoice, RankError, candidates, rank_program, read_program
    from solutions.rank.write import check_writable

    try:
        chosen = get_collection(args.collection) if args.collection else None
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    try:
        program = read_program(args.program, task=chosen.task if chosen else None, kernel=args.kernel,
                               module=args.module)
    except DumpChoice as exc:  # a dump folder: list its modules and say which to pick
        if not args.json:
            print("\n".join(exc.listing))
        return _refused(args, str(exc), 2)
    except RankError as exc:
        return _refused(args, str(exc), 1)
    if args.sample and program.kind.sample_refusal:
        raise UsageError(f"{args.program}: {program.kind.sample_refusal}")
    try:  # the candidates, the model(s), --explain and --write: refused as usage errors
        if args.write:
            check_writable(program, args.write)
        configs, source, added = candidates(program, configs_file=args.configs, sample=args.sample,
                                            seed=args.seed)
        result = rank_program(program, args.model, collection=chosen.name if chosen else None,
                              configs=configs, candidate_source=source, top=args.top, reference_added=added)
        if args.explain is not None:
            result.explanation = _explain(result, args.explain)
        if args.write:
            result.written = _write(result, args.write)
    except (RankError, ValueError) as exc:
        raise UsageError(str(exc)) from None
    print(json.dumps(result.to_json_dict()) if args.json else result.format())
    return 0


def _refused(args: argparse.Namespace, message: str, code: int) -> int:
    print(f"tpugraphs rank: {message}", file=sys.stderr)
    if args.json:  # --json: stdout still carries one document
        from competition.commands.json_problems import message_problem, problems_document

        print(problems_document([message_problem(message)], code))
    return code


def _explain(result, which: int):
    from solutions.rank.explain import explain
    from solutions.rank.ranking import RankError

    index = int(result.order[0]) if which == BEST else which
    if which == BEST and index == result.reference_candidate:  # the program as it stands is predicted best
        if len(result.order) < 2:
            raise RankError("--explain: the reference is the only candidate ranked; nothing to take apart")
        index = int(result.order[1])  # the best that changes something: its gain is negative, said so
    if index >= result.candidates:
        raise RankError(f"--explain {which}: there are {result.candidates:,} candidates "
                        f"(0-{result.candidates - 1})")
    place = {int(c): i + 1 for i, c in enumerate(result.order)}
    assert result.scorer is not None and result.reference_config is not None
    return explain(result.program, result.scorer, result.reference_config, result.scorer.candidates[index],
                   index=index, rank=place.get(index))


def _write(result, path: str):
    from solutions.rank.write import write_layouts

    e = result.explanation
    if e is not None and e.config is not None:
        config = e.config
        what = (f"--explain's minimal set for candidate {e.candidate} ({len(e.minimal_set)} of "
                f"{len(e.changes)} changes)")
    elif e is not None:
        config, what = result.scorer.candidates[e.candidate], f"candidate {e.candidate} (all its changes)"
    else:
        best = int(result.order[0])
        config, what = result.scorer.candidates[best], f"the best candidate (candidate {best})"
    return write_layouts(result.program, config, result.reference_config, path, what)
