"""Blending submissions by their rankings: ``tpugraphs ensemble``.

Every input is read with the kit's validator; the inputs must cover exactly the same IDs (an input
that lacks IDs the others have, or has extra ones, is named with examples). Then, per graph:

- **layout**: every input ranks every config; a config's position in input ``i`` is ``pos_i``.
- **tile**: an input lists only its top ``k = 5`` (only those count toward the score); the blend
  ranks the union of the listed configs and writes its first 5.

Methods (``weights`` default to 1 each):

- ``rank-mean``: order by the weighted mean position. A tile config an input did not list gets the
  mean position of that input's unlisted configs, ``(m + n - 1) / 2`` (``m`` listed of ``n``), i.e.
  "somewhere below the list". With the real config counts (``--data`` or ``--solution``) a config
  listed by a single input rarely beats one listed by several.
- ``borda``: each input gives ``m - pos`` points to its ``pos``-th listed config and nothing to the
  unlisted ones; order by the weighted points. For tile this favours a config one input is sure of
  more than ``rank-mean`` does.

For layout rows (full permutations) the two orders coincide; they differ only on tile rows. Ties
are broken by the position in the first input (the highest weight first), then by config index,
so the same inputs always give the same file. The blend is written with the kit's writer
(``competition.predictions.write_submission``) and checked with the kit's validator.

Without ``expected`` config counts, they are inferred from the inputs (layout: the row length;
tile: one more than the largest index listed), which is all the rules need except that a tile row
listing fewer than 5 configs of a larger graph cannot be caught; pass the test files' counts for the
full check.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from competition.collections import parse_row_id
from competition.predictions import write_submission
from competition.submission import expected_from_own_rows, format_problems, validate_submission
from competition.tasks import Task

METHODS = ("rank-mean", "borda")
_SHOW_IDS = 3  # IDs named per input in a coverage error

__all__ = ["METHODS", "EnsembleError", "EnsembleResult", "blend_row", "ensemble", "ensemble_files",
           "infer_expected", "parse_weights"]


class EnsembleError(ValueError):
    """Inputs that cannot be blended (invalid, different IDs, bad weights); the message says which."""


def parse_weights(text: str | None, count: int) -> np.ndarray:
    """``"1,1,2"`` -> weights, one positive finite number per input; None -> all 1."""
    if text is None:
        return np.ones(count)
    parts = [p.strip() for p in text.split(",")]
    try:
        weights = np.array([float(p) for p in parts])
    except ValueError:
        raise EnsembleError(f"--weights must be comma-separated numbers, e.g. 1,1,2; got {text!r}") from None
    if len(weights) != count:
        raise EnsembleError(f"--weights lists {len(weights)} weight(s) for {count} input(s); give "
                            "one per input")
    if not (np.isfinite(weights).all() and (weights > 0).all()):
        raise EnsembleError(f"--weights must be positive finite numbers; got {text!r}")
    return weights


def infer_expected(paths: Sequence[str | Path]) -> dict[str, int]:
    """IDs and config counts read leniently from the inputs themselves (the validator checks them after).

    Each file through ``competition.submission.expected_from_own_rows`` (the same rule a format-only
    ``submit --kaggle`` uses), merged by taking the largest count an ID gets in any file.
    """
    expected: dict[str, int] = {}
    for path in paths:
        for row_id, n in expected_from_own_rows(path).items():
            expected[row_id] = max(expected.get(row_id, 0), n, 1)
    return expected


def _coverage_problems(ids: Mapping[str, set[str]]) -> list[str]:
    everything = set().union(*ids.values())
    problems = []
    for name, have in ids.items():
        missing = sorted(everything - have)
        if missing:
            shown = ", ".join(missing[:_SHOW_IDS]) + (f" and {len(missing) - _SHOW_IDS} more"
                                                      if len(missing) > _SHOW_IDS else "")
            others = [other for other, theirs in ids.items() if other != name and set(missing) & theirs]
            problems.append(f"{name} lacks {len(missing)} ID(s) that {', '.join(others)} cover(s): {shown}")
    return problems


def blend_row(rankings: Sequence[np.ndarray], weights: np.ndarray, method: str, *, task: Task,
              n_configs: int) -> np.ndarray:
    """The blended ranking of one graph (fastest first), as many configs as the task's rows list."""
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; expected one of {', '.join(METHODS)}")
    lists = [task.scored_part(np.asarray(r, dtype=np.int64)) for r in rankings]
    candidates = np.unique(np.concatenate(lists))
    where = {int(c): i for i, c in enumerate(candidates)}
    positions = np.empty((len(lists), len(candidates)))
    for i, listed in enumerate(lists):
        m = len(listed)
        unlisted = (m + n_configs - 1) / 2 if method == "rank-mean" else m  # borda: 0 points = position m
        positions[i].fill(max(unlisted, m))
        positions[i, [where[int(c)] for c in listed]] = np.arange(m)
    blended = weights @ positions / weights.sum()
    first = np.argsort(-weights, kind="stable")[0]  # tie-break on the input that weighs most
    order = np.lexsort((candidates, positions[first], blended))
    ranking = candidates[order]
    return task.scored_part(ranking)


@dataclass
class EnsembleResult:
    """What ``ensemble`` did."""

    out: Path
    method: str
    inputs: list[str]
    weights: list[float]
    rows: int
    counts_from: str  # where the config counts came from: "data", "solution" or "inferred"
    scores: dict[str, float] = field(default_factory=dict)  # input or out name -> score (with a solution)

    def to_json_dict(self) -> dict:
        return {"out": str(self.out), "method": self.method, "rows": self.rows,
                "counts_from": self.counts_from,
                "inputs": [{"submission": name, "weight": w} for name, w in zip(self.inputs, self.weights,
                                                                                  strict=True)],
                "scores": dict(self.scores) or None}

    def format(self) -> str:
        lines = [f"{self.out}: {self.method} blend of {len(self.inputs)} submissions, {self.rows} rows "
                 f"(valid; config counts from {self.counts_from})"]
        lines += [f"  weight {w:g}  {name}"
                  + (f"  score {self.scores[name]:.4f}" if name in self.scores else "")
                  for name, w in zip(self.inputs, self.weights, strict=True)]
        if str(self.out) in self.scores:
            lines.append(f"  ensemble score {self.scores[str(self.out)]:.4f}")
        return "\n".join(lines)


def ensemble(inputs: Mapping[str, Mapping[str, np.ndarray]], expected: Mapping[str, int], *,
             weights: np.ndarray | None = None, method: str = "rank-mean") -> dict[str, np.ndarray]:
    """Blend validated rows (name -> ID -> config indices) that cover the same IDs."""
    if method not in METHODS:
        raise EnsembleError(f"unknown method {method!r}; expected one of {', '.join(METHODS)}")
    if len(inputs) < 2:
        raise EnsembleError(f"an ensemble needs at least 2 submissions; got {len(inputs)}")
    problems = _coverage_problems({name: set(rows) for name, rows in inputs.items()})
    if problems:
        raise EnsembleError("the submissions do not cover the same IDs:\n" + "\n".join(problems))
    weights = np.ones(len(inputs)) if weights is None else np.asarray(weights, dtype=np.float64)
    all_rows = list(inputs.values())
    return {
        row_id: blend_row([rows[row_id] for rows in all_rows], weights, method,
                          task=parse_row_id(row_id)[0].task, n_configs=int(expected[row_id]))
        for row_id in all_rows[0]
    }


def ensemble_files(paths: Sequence[str | Path], out: str | Path, *, weights: np.ndarray | None = None,
                   method: str = "rank-mean", expected: Mapping[str, int] | None = None,
                   counts_from: str = "given") -> EnsembleResult:
    """Validate the input files, blend them, write ``out`` and validate it; see the module docstring."""
    names = [str(p) for p in paths]
    if len(set(names)) != len(names):
        raise EnsembleError("the same file is given twice; use --weights to count a submission more")
    if expected is None:
        expected, counts_from = infer_expected(paths), "inferred"
    validated = {}
    ids: dict[str, set[str]] = {}
    for path, name in zip(paths, names, strict=True):
        # Validated against the union of IDs, so a missing one shows up as a coverage problem below.
        result = validate_submission(path, expected)
        bad = [p for p in result.problems if p.rule != "missing-id"]
        if bad or result.problems_truncated:
            raise EnsembleError(f"{name} is not a valid submission:\n"
                                + format_problems(result, source_name=name))
        validated[name] = result.rows
        ids[name] = set(result.rows)
    problems = _coverage_problems(ids)
    if not problems and set(expected) - set().union(*ids.values()):
        missing = sorted(set(expected) - set().union(*ids.values()))
        problems = [f"every input lacks {len(missing)} test ID(s): {', '.join(missing[:_SHOW_IDS])}"]
    if problems:
        raise EnsembleError("the submissions do not cover the same IDs:\n" + "\n".join(problems))
    rows = ensemble(validated, expected, weights=weights, method=method)
    written = write_submission(out, rows)
    check = validate_submission(written, expected)
    if not check.ok:  # a bug in the blend, never the user's fault
        raise RuntimeError("the blended submission is invalid:\n"
                           + format_problems(check, source_name=str(written)))
    used = np.ones(len(names)) if weights is None else np.asarray(weights, dtype=np.float64)
    return EnsembleResult(Path(written), method, names, [float(w) for w in used], len(rows), counts_from)
