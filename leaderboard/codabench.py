"""Export the kit's scorer as a Codabench scoring program.

The exported folder holds ``score.py``, ``metadata.yaml`` and a copy of the scoring modules of
``competition/`` (numpy is their only dependency), so Codabench scores with exactly the code behind
``tpugraphs score`` and this server. Codabench runs it as ``score.py /app/input /app/output`` with
the reference data (the solution CSV) in ``input/ref`` and the participant's unzipped submission in
``input/res``; it writes ``output/scores.json``. On any failure it exits non-zero and writes nothing.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from competition.sources import PACKAGE_DIR, rules_files
from leaderboard.version import SCORER_VERSION

METADATA = """\
command: python3 /app/program/score.py /app/input /app/output
description: TpuGraphs (Fast or Slow? Predict AI Model Runtime) scorer, exported from the tpugraphs kit.
"""

SCORE_PY = '''\
"""Codabench scoring program for TpuGraphs, exported by `tpugraphs leaderboard export-codabench`.

usage: python3 score.py [INPUT_DIR [OUTPUT_DIR]]    (default /app/input /app/output)

Reads the solution CSV from INPUT_DIR/ref and the submission CSV from INPUT_DIR/res (the only CSV
there, or the one called submission.csv), scores it with the kit's scorer (copied next to this
file) and writes OUTPUT_DIR/scores.json. On failure it prints why on stderr, exits non-zero and
writes nothing. Messages about the submission are written for participants; host-side faults
print no detail.
"""

import json
import os
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))  # the scorer copied next to this file, never another installed one

from competition.errors import ParticipantVisibleError  # noqa: E402
from competition.scoring import load_solution, score_submission  # noqa: E402

SCORER_VERSION = {version!r}


class Refused(Exception):
    """A problem participants may read about."""


def _one_csv(folder, preferred, what):
    if not folder.is_dir():
        raise FileNotFoundError(f"{{folder}} is missing")
    found = sorted(p for p in folder.rglob("*.csv") if p.is_file() and not p.name.startswith("."))
    named = [p for p in found if p.name == preferred]
    if len(named) == 1:
        return named[0]
    if len(found) == 1:
        return found[0]
    raise Refused(f"expected exactly one CSV file in the {{what}} (or one called {{preferred}}), "
                  f"found {{len(found)}}")


def _key(name):
    return name.replace(":", "_")


def main(argv):
    input_dir = Path(argv[1]) if len(argv) > 1 else Path("/app/input")
    output_dir = Path(argv[2]) if len(argv) > 2 else Path("/app/output")
    try:
        submission = _one_csv(input_dir / "res", "submission.csv", "submission")
        solution_path = _one_csv(input_dir / "ref", "solution.csv", "reference data")
        report = score_submission(submission, load_solution(solution_path), source_name=submission.name)
    except Refused as exc:
        print(f"submission refused: {{exc}}", file=sys.stderr)
        return 1
    except ParticipantVisibleError as exc:
        print(str(exc), file=sys.stderr)
        return 1
    except Exception as exc:  # host-side: say which kind, never its text (it may name hidden files)
        print(f"scoring failed on the host side ({{type(exc).__name__}}); the organisers must check the "
              "scoring program and the reference data", file=sys.stderr)
        return 2
    scores = {{"public": report.public, "private": report.private, "score": report.score}}
    scores.update({{f"public_{{_key(k)}}": v for k, v in report.public_collections.items()}})
    scores.update({{f"private_{{_key(k)}}": v for k, v in report.private_collections.items()}})
    output_dir.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=output_dir, prefix=".scores-", suffix=".json")
    with os.fdopen(fd, "w") as fh:
        json.dump(scores, fh)
    os.replace(tmp, output_dir / "scores.json")  # all or nothing
    import competition

    print(f"scored {{submission.name}} with the tpugraphs scorer {{SCORER_VERSION}} "
          f"({{Path(competition.__file__).resolve().parent}})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
'''

README = """\
# TpuGraphs scoring program for Codabench

Exported by `tpugraphs leaderboard export-codabench` (scorer {version}).

- Zip the *contents* of this folder (not the folder) and use it as the scoring program;
  the reference data is a zip holding the solution CSV (`ID,Runtimes,Normalizers,Usage`).
- The Docker image needs Python 3.11 or newer and numpy (e.g. `python:3.11` with `pip install numpy`).
- Participants submit a zip holding one CSV (`ID,TopConfigs`).

`scores.json` keys: `public`, `private`, `score` (Public + Private rows), and per collection
`public_<collection>` / `private_<collection>` (`:` replaced by `_`, e.g. `public_layout_xla_random`),
for the collections that have rows of that usage. Show only `public` and `public_*` columns during
the competition: every `private*` key and `score` carry information about the private rows.

Try it locally:

    mkdir -p input/ref input/res && cp solution.csv input/ref/ && cp submission.csv input/res/
    python3 score.py input output && cat output/scores.json
"""


def export_scoring_program(out_dir: str | Path) -> Path:
    """Write the scoring program into ``out_dir`` (created; must be empty if it exists)."""
    out = Path(out_dir)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise FileExistsError(f"{out}: exists and is not an empty folder")
    package = out / "competition"
    package.mkdir(parents=True)
    # The rules package alone (the export test runs the program on this copy): the files the scorer
    # version hashes, so the exported program is exactly the scorer that version names.
    for relative in rules_files():
        (package / relative).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(PACKAGE_DIR / relative, package / relative)
    (out / "score.py").write_text(SCORE_PY.format(version=SCORER_VERSION))
    (out / "metadata.yaml").write_text(METADATA)
    (out / "README.md").write_text(README.format(version=SCORER_VERSION))
    return out
