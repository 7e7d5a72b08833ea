"""What every method's saved model shares: reading its JSON, and refusing a file this code cannot use
with one line that names the file and the command that writes it again."""

from __future__ import annotations

import json
from pathlib import Path


class SavedModelError(ValueError):
    """A saved model this code cannot use (another format version, a setting it cannot rebuild).

    The message names the file and what is wrong; ``tpugraphs solve --predict-only`` shows it as a
    usage error instead of predicting with different settings.
    """


def retrain_command(method: str, collection: object) -> str:
    """The command that trains a saved model of ``method`` again (on ``collection`` when the file names
    one), for the refusal of a model this kit cannot use."""
    name = collection if isinstance(collection, str) and collection else "NAME"
    return f"tpugraphs solve --method {method} --collection {name} --data PUBLIC_DIR --out SUB.csv"


def read_saved_json(file: Path) -> dict:
    """A saved model's JSON file as a dict; ``SavedModelError`` naming the file when it is not one (a
    damaged copy, a hand edit)."""
    try:
        data = json.loads(Path(file).read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise SavedModelError(f"{file}: not JSON ({exc}); write the model again (run without "
                              "--predict-only)") from None
    if not isinstance(data, dict):
        raise SavedModelError(f"{file}: a JSON object was expected, not a {type(data).__name__}; write the "
                              "model again (run without --predict-only)")
    return data


def unreadable_model_file(file: Path, reader: str, exc: BaseException) -> SavedModelError:
    """The refusal of a saved weight file its library cannot read (damaged, truncated, another model's):
    the file, the library's complaint in one line, and what to do."""
    complaint = (str(exc).strip().splitlines() or [""])[0][:200]
    return SavedModelError(f"{file}: {reader} cannot read it ({type(exc).__name__}: {complaint}); write the "
                           "model again (run without --predict-only)")


def is_version(saved: object, current: int) -> bool:
    """Whether a saved version is this code's ``current`` one: a whole number equal to it (4.0, "4" or True
    are not version 4)."""
    return isinstance(saved, int) and not isinstance(saved, bool) and saved == current


def shown_version(saved: object) -> str:
    """A saved version as a refusal names it (a value that is no whole number says so)."""
    whole = isinstance(saved, int) and not isinstance(saved, bool)
    return str(saved) if whole else f"{saved!r} (not a whole number)"
