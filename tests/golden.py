"""Frozen behaviour: what the kit writes and says, recorded so a refactor can prove it changed nothing.

``capture(workdir)`` builds the tiny embedded competition (seed 0), solves it with the deterministic
methods, scores and validates the submissions through the command line, and runs the validator and
the Kaggle ``score()`` over the table of bad files of ``tests/test_submission.py``. It returns one
JSON-able dict: file hashes of the competition and of every submission, the exact score and validate
outputs, and every validator message. ``tests/test_golden.py`` compares it with
``tests/golden/behaviour.json``.

A change that is *meant* to alter behaviour (a new generator, a new rule) regenerates the record and
says so in its commit::

    .venv/bin/python -m tests.golden --update
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import io
import json
import sys
import tempfile
from pathlib import Path

RECORD = Path(__file__).parent / "golden" / "behaviour.json"
METHODS = ("random", "heuristic", "gbdt")  # the gnn's floats depend on the machine's BLAS


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _cli(*argv: str) -> dict:
    """Run ``tpugraphs ARGV`` in process; its exit code and both streams."""
    from competition.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return {"exit": code, "stdout": out.getvalue(), "stderr": err.getvalue()}


def _tree_hashes(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): _sha(p) for p in sorted(root.rglob("*")) if p.is_file()}


def _bad_file_messages() -> dict[str, dict]:
    import pandas as pd

    from competition.errors import ParticipantVisibleError
    from competition.kaggle_metric import score
    from competition.submission import format_problems, validate_submission
    from tests import test_submission as cases

    solution = pd.DataFrame({
        "ID": list(cases.EXPECTED),
        "Runtimes": [";".join(str(100 + i) for i in range(n)) for n in cases.EXPECTED.values()],
        "Normalizers": [";".join(["100"] * n) if ":tile:" in f":{r}" else ""
                        for r, n in cases.EXPECTED.items()],
        "Usage": ["Public"] * len(cases.EXPECTED),
    })
    out: dict[str, dict] = {}
    for name, data, _rule, _line, _message, options in cases.BAD_FILES:
        result = validate_submission(data, cases.EXPECTED, **options)
        record = {
            "problems": [str(p) for p in result.problems],
            "report": format_problems(result, source_name="sub.csv"),
        }
        try:  # the same bytes as a DataFrame through Kaggle's contract, where pandas can read them
            frame = pd.read_csv(io.BytesIO(data), dtype=str, keep_default_na=False)
        except Exception:  # noqa: BLE001 - pandas' own refusal is not the kit's behaviour
            frame = None
        if frame is not None and not options:
            try:
                record["kaggle_score"] = repr(score(solution, frame, "ID"))
            except ParticipantVisibleError as exc:
                record["kaggle_error"] = str(exc)
            except Exception as exc:  # noqa: BLE001 - recorded, so a change of type shows too
                record["kaggle_error"] = f"{type(exc).__name__}: {exc}"
        out[name] = record
    return out


def capture(workdir: Path) -> dict:
    comp = workdir / "tiny"
    record: dict = {"synth": _cli("synth", str(comp), "--scale", "tiny", "--seed", "0")["exit"]}
    record["competition"] = _tree_hashes(comp)
    public, solution = comp / "public", comp / "private" / "solution.csv"
    for method in METHODS:
        sub = workdir / f"{method}.csv"
        solve = _cli("solve", "--data", str(public), "--method", method, "--out", str(sub), "--quiet",
                     "--json", str(workdir / f"{method}.json"))
        report = json.loads((workdir / f"{method}.json").read_text())
        record[method] = {
            "solve_exit": solve["exit"],
            "submission": _sha(sub),
            "valid_scores": {c["collection"]: c["validation_score"] for c in report["collections"]},
            "score": _cli("score", str(sub), "--solution", str(solution)),
            "score_json": _cli("score", str(sub), "--solution", str(solution), "--json"),
            "validate": _cli("validate", str(sub), "--data", str(public)),
        }
    broken = workdir / "broken.csv"
    broken.write_bytes((workdir / "gbdt.csv").read_bytes().replace(b";1;", b";1;1;", 3) + b"junk,1\n")
    record["broken_submission"] = {
        "validate": _cli("validate", str(broken), "--data", str(public)),
        "score": _cli("score", str(broken), "--solution", str(solution)),
    }
    record["bad_files"] = _bad_file_messages()
    return record


def _paths_relative(record: dict, workdir: Path) -> dict:
    return json.loads(json.dumps(record).replace(str(workdir), "WORKDIR"))


def capture_relative() -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        return _paths_relative(capture(Path(tmp)), Path(tmp))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--update", action="store_true", help=f"rewrite {RECORD}")
    args = parser.parse_args(argv)
    record = capture_relative()
    if args.update:
        RECORD.parent.mkdir(exist_ok=True)
        RECORD.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        print(f"wrote {RECORD}")
        return 0
    want = json.loads(RECORD.read_text(encoding="utf-8"))
    same = want == record
    print("unchanged" if same else "CHANGED")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
