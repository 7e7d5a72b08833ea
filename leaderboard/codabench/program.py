"""The Codabench scoring program: the kit's scorer, as Codabench's compute worker runs it.

The worker unzips the program into ``/app/program``, the phase's reference data into
``/app/input/ref`` and the participant's submission into ``/app/input/res``, runs the ``command``
of ``metadata.yaml`` and reads ``/app/output/scores.json``. The program written here holds:

- ``score.py``: the command. Written in syntax every Python parses, so that on an image older than
  Python 3.8 (Codabench's default ``codalab/codalab-legacy:py37``) it refuses in one line instead of
  a traceback; then it runs ``tpugraphs_scoring.py``.
- ``tpugraphs_scoring.py``: finds the two CSV files, checks numpy, scores with the copied rules and
  writes ``scores.json`` (all or nothing).
- ``competition/``: the rule files (``competition.sources.RULE_FILES``) rewritten for Python 3.8
  (``backport``), and ``_compat.py``; numpy is their only dependency.
- ``metadata.yaml`` and a ``README.md`` for the host.

A phase's reference data holds the labels of one split only (``bundle``): the program scores the rows
it marks Public or Private and writes ``score`` and one key per collection that has such rows. It
refuses reference data holding both, so no phase can show a private figure by mistake.
"""

from __future__ import annotations

from pathlib import Path

from competition.collections import COLLECTIONS
from competition.sources import PACKAGE_DIR, rules_files
from leaderboard.codabench.backport import COMPAT_MODULE, backport
from leaderboard.version import SCORER_VERSION

COMMAND = "python3 /app/program/score.py /app/input /app/output"
# The oldest numpy the exported rules were run with (under Python 3.8; tests/leaderboard/test_codabench*).
MIN_NUMPY = (1, 17)


def score_key(collection_name: str) -> str:
    """The ``scores.json`` key (and leaderboard column key) of a collection: ``layout_xla_random``."""
    return collection_name.replace(":", "_")


SCORE_KEYS = ("score", *(score_key(c.name) for c in COLLECTIONS))

METADATA = f"""\
command: {COMMAND}
description: TpuGraphs scorer {SCORER_VERSION}, exported from the tpugraphs kit.
"""

# Only syntax that Python 2.7 and 3.0-3.7 parse, so that the version check itself can run there.
LAUNCHER = '''\
"""Codabench scoring program for TpuGraphs (exported by `tpugraphs leaderboard export-codabench`).

usage: python3 score.py [INPUT_DIR [OUTPUT_DIR]]    (default /app/input /app/output)
"""
import os
import sys

if sys.version_info < (3, 8):
    sys.stderr.write("this scoring program needs Python 3.8 or newer, and the competition's Docker image "
                     "runs Python %d.%d: set the competition's docker_image to codalab/codalab-legacy:py312 "
                     "(or another image with Python 3.8+ and numpy)\\n" % tuple(sys.version_info[:2]))
    sys.exit(2)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # this program's own copy of the rules

from tpugraphs_scoring import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main(sys.argv))
'''

SCORING = '''\
"""The TpuGraphs scorer as a Codabench scoring program (Python 3.8+, numpy).

Reads the solution CSV from INPUT_DIR/ref (this phase's labels: one split) and the submission CSV
from INPUT_DIR/res (the only CSV there, or the one called submission.csv, in any subfolder), scores
it with the kit's rules (copied next to this file) and writes OUTPUT_DIR/scores.json: "score" and
one key per collection, over the rows the reference marks Public or Private. Exit 0 when scored;
1 with the validator's report on stderr when the submission breaks a rule (Codabench marks it
Failed and does not count it); 2 on a fault of the host's side (reference data, image), printing
only its kind. Nothing is written unless it scored.
"""

import json
import os
import sys
import tempfile
from pathlib import Path

SCORER_VERSION = {version!r}
MIN_NUMPY = {min_numpy!r}
PUBLIC, PRIVATE = 0, 1


class Refused(Exception):
    """A problem with the submission that participants may read about."""


class HostFault(Exception):
    """A problem on the organisers' side, described for them (no hidden data in the text)."""


def _one_csv(folder, preferred, what):
    if not folder.is_dir():
        raise HostFault("{{}} is missing".format(folder.name))
    found = sorted(p for p in folder.rglob("*.csv")
                   if p.is_file() and not any(part.startswith((".", "__MACOSX")) for part in
                                              p.relative_to(folder).parts))
    named = [p for p in found if p.name == preferred]
    if len(named) == 1:
        return named[0]
    if len(found) == 1:
        return found[0]
    raise Refused("expected exactly one CSV file in the {{}} (or one called {{}}), found {{}}".format(
        what, preferred, len(found)))


def _check_numpy():
    try:
        import numpy
    except ImportError:
        raise HostFault("numpy is not installed in the competition's Docker image; use an image with "
                        "Python 3.8+ and numpy, e.g. codalab/codalab-legacy:py312") from None
    version = tuple(int(part) for part in numpy.__version__.split(".")[:2] if part.isdigit())
    if version < MIN_NUMPY:
        raise HostFault("numpy {{}} is older than {{}}.{{}}, the oldest this program was checked with; use "
                        "an image with a newer numpy, e.g. codalab/codalab-legacy:py312".format(
                            numpy.__version__, *MIN_NUMPY))


def _scored_split(solution):
    """"Public" or "Private": the one split this phase's reference scores (None: no scored rows)."""
    splits = set()
    for labels in solution.labels.values():
        splits.update(int(code) for code in set(labels.usage.tolist()) if code in (PUBLIC, PRIVATE))
    if len(splits) > 1:
        raise HostFault("the reference data holds both Public and Private rows; each phase's reference "
                        "must hold the labels of one split (the bundle of tpugraphs leaderboard "
                        "export-codabench does)")
    return {{PUBLIC: "Public", PRIVATE: "Private"}}.get(splits.pop()) if splits else None


def main(argv):
    input_dir = Path(argv[1]) if len(argv) > 1 else Path("/app/input")
    output_dir = Path(argv[2]) if len(argv) > 2 else Path("/app/output")
    try:
        _check_numpy()
        from competition.errors import ParticipantVisibleError
        from competition.scoring import load_solution, score_submission

        solution = load_solution(_one_csv(input_dir / "ref", "solution.csv", "reference data"))
        split = _scored_split(solution)
        submission = _one_csv(input_dir / "res", "submission.csv", "submission")
        try:
            report = score_submission(submission, solution, source_name=submission.name)
        except ParticipantVisibleError as exc:
            raise Refused(str(exc)) from None
    except Refused as exc:
        print("submission refused: {{}}".format(exc), file=sys.stderr)
        return 1
    except HostFault as exc:
        print("scoring failed on the host side: {{}}".format(exc), file=sys.stderr)
        return 2
    except Exception as exc:  # host-side: say which kind, never its text (it may name hidden data)
        print("scoring failed on the host side ({{}}); the organisers must check the scoring program and "
              "the reference data".format(type(exc).__name__), file=sys.stderr)
        return 2
    # Only what this phase scores, and no key for a collection (or a phase) without scored rows.
    scores = {{}}
    if report.collections:
        scores["score"] = report.score
        scores.update((name.replace(":", "_"), value) for name, value in report.collections.items())
    output_dir.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=str(output_dir), prefix=".scores-", suffix=".json")
    with os.fdopen(fd, "w") as fh:
        json.dump(scores, fh)
    os.replace(tmp, str(output_dir / "scores.json"))
    graphs = sum(count.get(split, 0) for count in report.graph_counts.values()) if split else 0
    print("scored {{}} on {{}} {{}} test graphs with the tpugraphs scorer {{}}".format(
        submission.name, graphs, split or "(no scored)", SCORER_VERSION))
    return 0
'''

README = """\
# TpuGraphs scoring program for Codabench

Exported by `tpugraphs leaderboard export-codabench` (scorer {version}); part of a competition
bundle, where `competition.yaml` names it as each task's scoring program.

- Command (`metadata.yaml`): `{command}`. It needs Python 3.8 or newer and numpy {min_numpy} or newer
  in the competition's Docker image (`docker_image` in `competition.yaml`); on an older Python it
  stops with one line saying so.
- Reference data: a zip holding `solution.csv` (`ID,Runtimes,Normalizers,Usage`) whose scored rows
  are all Public or all Private (one split per phase); a reference holding both is refused.
- Submission: a zip holding one CSV (`ID,TopConfigs`), or several with one called `submission.csv`.
- `scores.json`: `score` (the mean of the collection means over the scored rows) and one key per
  collection with scored rows: {keys}.
- Exit 0 scored; 1 the submission broke a rule (the validator's report on stderr); 2 a fault on the
  host's side (only its kind is printed). Nothing is written unless it scored.
"""


def write_program(out: Path) -> Path:
    """Write the scoring program into the folder ``out`` (created; it must not exist or be empty).

    BackportError when a rule file uses something newer than Python 3.8 that cannot be rewritten.
    """
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise FileExistsError(f"{out}: exists and is not an empty folder")
    sources = {
        relative: backport(
            (PACKAGE_DIR / relative).read_text(encoding="utf-8"), f"competition/{relative.as_posix()}"
        )
        for relative in rules_files()
    }
    package = out / "competition"
    package.mkdir(parents=True)
    for relative, text in sources.items():
        (package / relative).parent.mkdir(parents=True, exist_ok=True)
        (package / relative).write_text(text, encoding="utf-8")
    (package / "_compat.py").write_text(COMPAT_MODULE, encoding="utf-8")
    (out / "score.py").write_text(LAUNCHER, encoding="utf-8")
    (out / "tpugraphs_scoring.py").write_text(
        SCORING.format(version=SCORER_VERSION, min_numpy=MIN_NUMPY), encoding="utf-8"
    )
    (out / "metadata.yaml").write_text(METADATA, encoding="utf-8")
    (out / "README.md").write_text(
        README.format(
            version=SCORER_VERSION,
            command=COMMAND,
            min_numpy=".".join(map(str, MIN_NUMPY)),
            keys=", ".join(f"`{k}`" for k in SCORE_KEYS[1:]),
        ),
        encoding="utf-8",
    )
    return out
