"""What ``tpugraphs rank`` answers: the ranked candidates, as a table or one JSON document."""

from __future__ import annotations

import typing
from dataclasses import dataclass, field

import numpy as np

from solutions.kinds.program import Program

if typing.TYPE_CHECKING:
    from solutions.rank.explain import Explanation
    from solutions.rank.scoring import Scorer
    from solutions.rank.write import Written


@dataclass
class RankedConfig:
    rank: int  # 1 = predicted fastest
    index: int  # position among the candidates
    score: float | None  # the model's score (lower = faster); None for a seed ensemble (blended ranks)
    config: np.ndarray  # one config: (nc, 18) layout, (24,) tile
    changes: list[dict]  # what differs from the reference, each with its ``text``
    measured_rank: int | None = None  # 1 = measured fastest among the candidates; None: not measured


@dataclass
class Ranking:
    program: Program
    model: dict
    candidates: int
    candidate_source: str
    reference: str
    order: np.ndarray  # candidate indices, predicted fastest first (every candidate; 5 for a tile ensemble)
    top: list[RankedConfig] = field(default_factory=list)
    reference_candidate: int | None = None  # the reference's index among the candidates; None: absent
    reference_rank: int | None = None  # its predicted place; None: absent or not ranked
    reference_added: bool = False  # candidate 0 is the reference, added to a sample
    measured_tau: float | None = None  # Kendall tau of the predicted order against the measured one
    models: list[dict] = field(default_factory=list)  # every --model folder (``model`` is the first)
    reference_score: float | None = None  # the reference's score (``score_unit``); None: not a candidate
    score_unit: str = "the model's score"
    agreement: dict | None = None  # several --model folders: how far they agree
    scorer: Scorer | None = None  # what scored the candidates (``--explain`` scores with it too)
    reference_config: np.ndarray | None = None  # the config changes are counted against
    explanation: Explanation | None = None  # --explain
    written: Written | None = None  # --write

    def to_json_dict(self) -> dict:
        graph = self.program.graph
        return {
            "program": str(self.program.path),
            "task": graph.task.name,
            "format": self.program.form,
            "kernel": self.program.kernel,
            "configurable_nodes": None if graph.num_configurable_nodes is None
            else graph.node_config_ids.astype(int).tolist(),
            "model": self.model,
            "models": self.models or [self.model],
            "score_unit": self.score_unit,
            "candidates": self.candidates,
            "candidate_source": self.candidate_source,
            "reference": self.reference,
            "reference_row": {"candidate": self.reference_candidate, "rank": self.reference_rank,
                              "added": self.reference_added, "score": self.reference_score},
            "measured_kendall_tau": self.measured_tau,
            "warnings": self.program.warnings,
            "agreement": self.agreement,
            "explain": None if self.explanation is None else self.explanation.to_json(),
            "explain_summary": None if self.explanation is None else self.explanation.summary_json(),
            "written": None if self.written is None else self.written.to_json(),
            "top": [{
                "rank": r.rank, "candidate": r.index, "predicted_score": r.score,
                # None: the kit's models are trained with ranking losses; their scores order configs
                # but are not runtimes, so no relative runtime is claimed (docs/rank.md).
                "predicted_relative_runtime": None,
                "measured_rank": r.measured_rank,
                "config": r.config.astype(int).tolist(), "changes": r.changes,
            } for r in self.top],
        }

    def format(self) -> str:
        lines = [f"{self.program.path}: {self.program.describe()}",
                 f"{self.candidates:,} candidate configs ({self.candidate_source}), ranked by "
                 + self._models_text(),
                 f"changes are against {self.reference}", self._reference_line()]
        lines[1:1] = [f"warning: {w}" for w in self.program.warnings]
        if self.agreement is not None:
            lines.append(self.agreement["sentence"])
        if self.measured_tau is not None:
            lines.append(f"measured: the candidates' runtimes are known; Kendall tau of the predicted order "
                         f"against them {self.measured_tau:+.3f} over {self.candidates:,} configs")
        if not self._has_sources():
            lines.append("source locations: none in the program (no instruction metadata); changes are "
                         "named by instruction only")
        measured = self.measured_tau is not None or any(r.measured_rank is not None for r in self.top)
        head = f"{'rank':>4s} {'candidate':>9s} {'score':>10s}" + (f" {'measured':>8s}" if measured else "")
        lines.append(head + "  changes")
        for r in self.top:
            score = "-" if r.score is None else f"{r.score:.4f}"
            row = f"{r.rank:4d} {r.index:9d} {score:>10s}"
            if measured:
                row += f" {'-' if r.measured_rank is None else r.measured_rank:>8}"
            lines.append(f"{row}  {self._changes_text(r.changes)}")
        if len(self.order) < self.candidates:
            lines.append(f"a seed ensemble of {self.model['collection']} blends each model's top "
                         f"{len(self.order)}, as solve does: only those are ranked")
        lines.append("scores order configs (lower = predicted faster); they are not runtimes. "
                     "docs/rank.md says what the ranking is worth.")
        if self.explanation is not None:
            lines += self._explain_lines()
        if self.written is not None:
            lines += self.written.lines()
        return "\n".join(lines)

    def _models_text(self) -> str:
        models = self.models or [self.model]

        def one(m: dict) -> str:
            count = f"{m['models']} model{'s' if m['models'] > 1 else ''}"
            why = f"; {m['chosen_because']}" if m.get("chosen_because") else ""
            return f"the {m['method']} model of {m['collection']} ({count}, {m['dir']}{why})"

        if len(models) == 1:
            return one(models[0])
        return f"the blend of {len(models)} folders: " + "; ".join(one(m) for m in models)

    def _has_sources(self) -> bool:
        space = self.program.space
        return space is None or any(n.source.file is not None for n in space.nodes)

    def _reference_line(self) -> str:
        if self.reference_candidate is None:
            return "the reference is not among the candidates (--sample adds it)"
        where = f"candidate {self.reference_candidate}"
        if self.reference_added:
            where += ", added to the sample"
        score = "" if self.reference_score is None else f", score {self.reference_score:.4f}"
        if self.reference_rank is None:
            return f"the reference ({where}{score}) is not among the {len(self.order)} ranked"
        return f"the reference ({where}{score}) ranks {self.reference_rank:,} of {self.candidates:,}"

    def _changes_text(self, changes: list[dict], limit: int = 3) -> str:
        if not changes:
            return "none (the reference)"
        shown = [_with_source(c) for c in changes[:limit]]
        more = f" and {len(changes) - limit} more" if len(changes) > limit else ""
        return "; ".join(shown) + more

    def _explain_lines(self) -> list[str]:
        from solutions.rank.explain import TARGET

        e = self.explanation
        assert e is not None
        lines = ["", f"--explain candidate {e.candidate} (rank {e.rank}): {len(e.changes)} changes; "
                 f"predicted gain {e.gain:+.4f} ({e.reference_score:.4f} for the reference, "
                 f"{e.candidate_score:.4f} for the candidate, scored side by side; {self.score_unit})"]
        if e.gain <= 0:
            lines.append("the candidate is not predicted faster than the reference: no gain to take apart; "
                         "each change alone:")
        lines.append(f"{'gain':>9s} {'share':>7s} {'set':>3s}  change (each applied alone to the reference)")
        for c in e.changes:
            share = "-" if c["share"] is None else f"{100 * c['share']:.0f}%"
            mark = "*" if c["in_minimal_set"] else ""
            lines.append(f"{c['predicted_gain']:+9.4f} {share:>7s} {mark:>3s}  {_with_source(c)}")
        if e.minimal_set:
            share = e.set_share or 0.0
            verdict = f"reaches {100 * share:.0f}%" if e.reached else \
                f"reaches only {100 * share:.0f}% (below {100 * TARGET:.0f}%)"
            lines.append(f"* the greedy smallest set: {len(e.minimal_set)} of {len(e.changes)} changes "
                         f"{verdict} of the candidate's predicted gain (score {e.set_score:.4f})")
        return lines


def _with_source(change: dict) -> str:
    """A change's text with where its instruction came from (``file:line``), when the program says."""
    source = change.get("source") or {}
    if not source.get("file"):
        return change["text"]
    return f"{change['text']} [{change['where']}]"
