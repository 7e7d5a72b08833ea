"""What ``tpugraphs rank`` answers: the ranked candidates, as a table or one JSON document."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from solutions.kinds.program import Program


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
            "candidates": self.candidates,
            "candidate_source": self.candidate_source,
            "reference": self.reference,
            "reference_row": {"candidate": self.reference_candidate, "rank": self.reference_rank,
                              "added": self.reference_added},
            "measured_kendall_tau": self.measured_tau,
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
        models = f"{self.model['models']} model{'s' if self.model['models'] > 1 else ''}"
        why = f"; {self.model['chosen_because']}" if self.model.get("chosen_because") else ""
        lines = [f"{self.program.path}: {self.program.describe()}",
                 f"{self.candidates:,} candidate configs ({self.candidate_source}), ranked by the "
                 f"{self.model['method']} model of {self.model['collection']} "
                 f"({models}, {self.model['dir']}{why})",
                 f"changes are against {self.reference}", self._reference_line()]
        if self.measured_tau is not None:
            lines.append(f"measured: the candidates' runtimes are known; Kendall tau of the predicted order "
                         f"against them {self.measured_tau:+.3f} over {self.candidates:,} configs")
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
        return "\n".join(lines)

    def _reference_line(self) -> str:
        if self.reference_candidate is None:
            return "the reference is not among the candidates (--sample adds it)"
        where = f"candidate {self.reference_candidate}"
        if self.reference_added:
            where += ", added to the sample"
        if self.reference_rank is None:
            return f"the reference ({where}) is not among the {len(self.order)} ranked"
        return f"the reference ({where}) ranks {self.reference_rank:,} of {self.candidates:,}"

    def _changes_text(self, changes: list[dict], limit: int = 3) -> str:
        if not changes:
            return "none (the reference)"
        shown = [c["text"] for c in changes[:limit]]
        more = f" and {len(changes) - limit} more" if len(changes) > limit else ""
        return "; ".join(shown) + more
