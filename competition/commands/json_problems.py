"""What ``--json`` prints when a command cannot report: one JSON document on stdout, like a report.

Every reporting command (``validate``, ``score``, ``report``, ``compare``, ``stats``, ``inspect``,
``solve``) prints exactly one JSON document on stdout with ``--json``, whether it succeeds or not,
and exits with the same code as without it. A failure is ``{"ok": false, "exit_code": N,
"problems": [{"line", "id", "rule", "message"}, ...], "problems_truncated": bool}``; a problem
without a line, an ID or a rule has null there (a usage error is one problem with only a message).
The human-readable message still goes to stderr.
"""

from __future__ import annotations

import json


def problems_document(problems: list[dict], exit_code: int, *, truncated: bool = False) -> str:
    return json.dumps({"ok": False, "exit_code": exit_code, "problems": problems,
                       "problems_truncated": truncated})


def message_problem(message: str) -> dict:
    return {"line": None, "id": None, "rule": None, "message": message}


def validation_problems(result) -> list[dict]:
    """A ``ValidationResult``'s problems as plain dicts (``competition.submission.rules.Problem``)."""
    return [{"line": p.line, "id": p.row_id, "rule": p.rule, "message": p.message} for p in result.problems]


def wants_json(args) -> bool:
    """Whether the command was asked for JSON on stdout (``--json``; ``solve --json`` without a file)."""
    value = getattr(args, "json", None)
    return value is True or value == "-"


def json_in_argv(parser, argv) -> bool:
    """``wants_json`` for a command line argparse refused (no ``args`` to ask): ``--json`` in ``argv``
    where ``parser``'s command has it as a flag, or without a file name (``--json -``, ``--json=-``, or
    followed by another option) where it takes one (``solve --json [REPORT.json]``)."""
    action = next((a for a in parser._actions if "--json" in a.option_strings), None)
    if action is None:
        return False
    takes_file = action.nargs == "?"
    for i, token in enumerate(argv):
        if token == "--json=-":
            return True
        if token == "--json":
            following = argv[i + 1] if i + 1 < len(argv) else None
            if not takes_file or following is None or following == "-" or following.startswith("-"):
                return True
    return False
