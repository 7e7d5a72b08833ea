"""A thin, lazy wrapper around the ``kaggle`` package for ``tpugraphs download`` and ``submit --kaggle``.

The ``kaggle`` package is optional: it is imported inside the functions, never at import time. Every
way it can fail here becomes one ``KaggleError`` whose message says what is missing and how to fix
it: the package absent, no credentials (``authenticate()`` and even ``import kaggle`` raise
``SystemExit``, not an Exception), no network (``requests``/``urllib3`` connection errors), and HTTP
refusals (401/403/404 with their usual causes).

Credential lookup is the package's own: ``KAGGLE_API_TOKEN`` or ``~/.kaggle/access_token``, else
``KAGGLE_USERNAME``/``KAGGLE_KEY`` or ``kaggle.json`` in ``~/.kaggle`` (or ``$KAGGLE_CONFIG_DIR``).
``credential_sources()`` only reports which of those exist, for messages.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

COMPETITION = "predict-ai-model-runtime"
# The one statement of which kaggle package works: pyproject's `kaggle` extra lists the same (a test checks).
# 2.2.5 needs a newer certifi than some registries carry; 2.x imports six without declaring it.
KAGGLE_REQUIREMENTS = ("kaggle>=1.6,!=2.2.5", "six")
INSTALL_HINT = "pip install " + " ".join(f"'{r}'" if any(c in r for c in "<>=!,") else r
                                         for r in KAGGLE_REQUIREMENTS)
CREDENTIALS_HINT = (
    "create an API token on https://www.kaggle.com/settings (API section) and either set "
    "KAGGLE_API_TOKEN, save it as ~/.kaggle/access_token, or put the legacy kaggle.json in ~/.kaggle "
    "(or $KAGGLE_CONFIG_DIR), or set KAGGLE_USERNAME and KAGGLE_KEY"
)
OFFLINE_HINT = "check your network connection (and proxy settings), then run the command again"

T = TypeVar("T")


class KaggleError(Exception):
    """A Kaggle call that could not be made or was refused; the message says how to fix it."""


def credential_sources() -> list[str]:
    """Where credentials are present (names only, never values), in the package's lookup order."""
    config_dir = Path(os.environ.get("KAGGLE_CONFIG_DIR") or Path.home() / ".kaggle")
    found = []
    if os.environ.get("KAGGLE_API_TOKEN"):
        found.append("$KAGGLE_API_TOKEN")
    if (config_dir / "access_token").is_file():
        found.append(str(config_dir / "access_token"))
    if os.environ.get("KAGGLE_USERNAME") and os.environ.get("KAGGLE_KEY"):
        found.append("$KAGGLE_USERNAME/$KAGGLE_KEY")
    if (config_dir / "kaggle.json").is_file():
        found.append(str(config_dir / "kaggle.json"))
    return found


def authenticated_api() -> Any:
    """An authenticated ``KaggleApi``; KaggleError when the package or the credentials are missing."""
    import contextlib
    import io

    chatter = io.StringIO()  # the package prints its own long help before exiting; ours replaces it
    try:
        # Importing the package authenticates in some versions, so the import is guarded like the call.
        with contextlib.redirect_stdout(chatter), contextlib.redirect_stderr(chatter):
            from kaggle.api.kaggle_api_extended import KaggleApi

            api = KaggleApi()
            api.authenticate()
    except ModuleNotFoundError as exc:
        root = (exc.name or "").split(".")[0]
        if root not in {"kaggle", "six"}:
            raise
        what = "is not installed" if root == "kaggle" else f"lacks its undeclared dependency {root!r}"
        raise KaggleError(f"the 'kaggle' package {what}: {INSTALL_HINT}") from None
    except SystemExit:
        raise KaggleError(f"no usable Kaggle credentials: {CREDENTIALS_HINT}") from None
    except Exception as exc:
        if _is_network_error(exc):  # newer versions check the token online while authenticating
            raise KaggleError(f"cannot reach Kaggle ({type(exc).__name__}); {OFFLINE_HINT}") from None
        if isinstance(exc, OSError | ValueError | KeyError):
            raise KaggleError(f"no usable Kaggle credentials ({exc}): {CREDENTIALS_HINT}") from None
        raise KaggleError(f"authenticating with Kaggle: {_explain(exc)}") from None
    return api


def call_kaggle(action: str, function: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """Run one API call, turning network and HTTP failures into a KaggleError about ``action``."""
    try:
        return function(*args, **kwargs)
    except KaggleError:
        raise
    except SystemExit as exc:  # the package exits on some refusals instead of raising
        raise KaggleError(f"{action}: the kaggle package gave up ({exc}); {CREDENTIALS_HINT}") from None
    except Exception as exc:
        raise KaggleError(f"{action}: {_explain(exc)}") from None


def download_competition_zip(dest: Path, competition: str = COMPETITION) -> Path:
    """Download the competition's files as ``dest/<competition>.zip`` (the package skips an up-to-date
    one)."""
    api = authenticated_api()
    dest.mkdir(parents=True, exist_ok=True)
    call_kaggle(f"downloading {competition} from Kaggle", api.competition_download_files, competition,
                path=str(dest), quiet=False)
    archive = dest / f"{competition}.zip"
    if not archive.is_file():
        raise KaggleError(f"the Kaggle download finished but {archive} is missing; run the command again")
    return archive


def submit(path: Path, message: str, competition: str = COMPETITION) -> str:
    """Submit ``path`` to the competition; returns the API's answer as text."""
    api = authenticated_api()
    answer = call_kaggle(f"submitting {path} to {competition}", api.competition_submit, str(path), message,
                         competition)
    return str(answer) if answer is not None else "submitted"


def _is_network_error(exc: BaseException) -> bool:
    """A requests/urllib3 connection failure, recognised by class name so that neither is imported."""
    names = {cls.__name__ for cls in type(exc).__mro__}
    return bool(names & {"ConnectionError", "NewConnectionError", "MaxRetryError", "Timeout",
                         "ConnectTimeout",
                         "ReadTimeout", "ProxyError", "SSLError", "NameResolutionError"})


def _explain(exc: Exception) -> str:
    """One line for an exception raised by the package, with a hint where the cause is known."""
    if _is_network_error(exc):
        return f"cannot reach Kaggle ({type(exc).__name__}); {OFFLINE_HINT}"
    status = getattr(exc, "status", None)
    response = getattr(exc, "response", None)
    if status is None and response is not None:
        status = getattr(response, "status_code", None)
    if status in (401,):
        return f"Kaggle refused the credentials (HTTP 401): {CREDENTIALS_HINT}"
    if status == 403:
        return (f"Kaggle refused access (HTTP 403): accept the competition rules on "
                f"https://www.kaggle.com/competitions/{COMPETITION}/rules with this account first")
    if status == 404:
        return f"not found on Kaggle (HTTP 404): check the competition name {COMPETITION!r}"
    if status is not None:
        return f"Kaggle answered HTTP {status}: {exc}"
    return f"{type(exc).__name__}: {exc}"


# --------------------------------------------------------------------------------------------------
# Checking a submission before spending a Kaggle slot

#: Test graphs per collection in Kaggle's test set (docs/competition.md, The task): 894 rows in all.
KAGGLE_TEST_ROWS = {"tile:xla": 844, "layout:xla:default": 8, "layout:xla:random": 8,
                    "layout:nlp:default": 17, "layout:nlp:random": 17}


def check_submission(path: Path, data_dir: Path | None = None) -> tuple[bool, str]:
    """Validate ``path`` before submitting; returns (valid, report to print).

    With ``data_dir`` (the local test files) this is ``tpugraphs validate``. Without it the test IDs
    and config counts are unknown, so only what the file itself shows is checked: encoding, CSV
    structure, ID syntax and duplicates, index syntax, duplicate indices, layout rows being a
    permutation of 0..len-1, and the row count per collection of Kaggle's test set. Unknown IDs,
    missing graphs and out-of-range indices are not caught then.
    """
    from collections import Counter

    from competition.collections import parse_row_id
    from competition.data.graphs import expected_from_data_dir
    from competition.submission import expected_from_own_rows, format_problems, validate_submission

    if data_dir is not None:
        expected = expected_from_data_dir(data_dir)
        scope = f"against the test graphs of {data_dir}"
    else:
        expected = expected_from_own_rows(path)
        scope = "format only (no --data: test IDs and config counts unknown)"
    result = validate_submission(path, expected)
    problems = [] if result.ok else [format_problems(result, source_name=str(path)), f"(checked {scope})"]
    if data_dir is None and result.ok:
        counts = Counter(parse_row_id(row_id)[0].name for row_id in expected)
        for name, want in KAGGLE_TEST_ROWS.items():
            if counts[name] != want:
                problems.append(f"{path}: {counts[name]} {name} rows; Kaggle's test set has {want}")
    if problems:
        return False, "\n".join(problems)
    return True, f"{path}: valid submission, {scope}"
