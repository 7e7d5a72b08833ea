"""The participant's side of ``tpugraphs submit``: upload a file to a leaderboard server.

Standard library only (urllib), so submitting needs nothing beyond the kit's light install.
Every failure becomes one of two exceptions with a message worth printing as is:
``ServerUnreachable`` (no answer: wrong URL, server down, network) and ``ServerRefused`` (the server
answered with an error; ``.detail`` is its participant-safe message).
"""

from __future__ import annotations

import json
import secrets
import urllib.error
import urllib.request
from pathlib import Path

USER_AGENT = "tpugraphs-submit"


class ServerUnreachable(Exception):
    pass


class ServerRefused(Exception):
    def __init__(self, status: int, detail: str, payload: dict | None = None) -> None:
        super().__init__(detail)
        self.status = status
        self.detail = detail
        self.payload = payload or {}


def _multipart(field: str, file_name: str, content: bytes) -> tuple[bytes, str]:
    boundary = "tpugraphs-" + secrets.token_hex(16)
    safe_name = file_name.replace('"', "_").replace("\r", "_").replace("\n", "_")
    head = (
        f"--{boundary}\r\n"
        f'Content-Disposition: form-data; name="{field}"; filename="{safe_name}"\r\n'
        "Content-Type: text/csv\r\n\r\n"
    ).encode()
    return head + content + f"\r\n--{boundary}--\r\n".encode(), f"multipart/form-data; boundary={boundary}"


def _request(request: urllib.request.Request, server: str, timeout: float) -> dict:
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310 - URL checked by caller
            return json.loads(response.read().decode("utf-8"))
    except urllib.error.HTTPError as err:
        raw = err.read().decode("utf-8", "replace")
        try:
            payload = json.loads(raw)
        except ValueError:
            payload = None
        if isinstance(payload, dict) and isinstance(payload.get("detail"), str):
            raise ServerRefused(err.code, payload["detail"], payload) from None
        raise ServerRefused(err.code, f"HTTP {err.code} {err.reason} (is {server} a tpugraphs leaderboard?)") from None
    except urllib.error.URLError as err:
        raise ServerUnreachable(f"cannot reach the leaderboard server at {server}: {err.reason}") from None
    except TimeoutError:
        raise ServerUnreachable(f"the leaderboard server at {server} did not answer within {timeout:g} s") from None
    except (ConnectionError, OSError) as err:
        raise ServerUnreachable(f"connection to the leaderboard server at {server} failed: {err}") from None
    except ValueError:
        raise ServerUnreachable(f"{server} answered something that is not JSON; is it a tpugraphs leaderboard?") from None


def competition_info(server: str, *, timeout: float = 30.0) -> dict:
    """``GET /api/competition``: name, deadline, limits, upload cap."""
    request = urllib.request.Request(server.rstrip("/") + "/api/competition",
                                     headers={"Accept": "application/json", "User-Agent": USER_AGENT})
    return _request(request, server, timeout)


def upload_submission(server: str, token: str, path: str | Path, *, timeout: float = 300.0) -> dict:
    """Upload ``path``; returns the server's JSON answer for a scored submission.

    Checks the server's upload cap and deadline first so a refusal comes before a long upload.
    """
    path = Path(path)
    info = competition_info(server, timeout=min(timeout, 30.0))
    size = path.stat().st_size
    cap = info.get("max_upload_bytes")
    if isinstance(cap, int) and size > cap:
        raise ServerRefused(413, f"{path.name} is {size / 2**20:.1f} MiB; the server accepts at most "
                                 f"{cap / 2**20:.1f} MiB")
    body, content_type = _multipart("file", path.name, path.read_bytes())
    request = urllib.request.Request(
        server.rstrip("/") + "/api/submissions", data=body, method="POST",
        headers={"Authorization": f"Bearer {token}", "Content-Type": content_type,
                 "Accept": "application/json", "User-Agent": USER_AGENT},
    )
    return _request(request, server, timeout)


def format_answer(answer: dict) -> str:
    """The server's answer for a scored submission, for a terminal."""
    lines = [f"Submission {answer.get('id')} ({answer.get('file_name')}) {answer.get('status')}."]
    if answer.get("public_score") is not None:
        lines.append(f"Public score: {answer['public_score']:.10f}")
        for name, value in (answer.get("public_collections") or {}).items():
            lines.append(f"  {name:<20} {value:.6f}")
    if "remaining_today" in answer:
        lines.append(f"{answer['remaining_today']} of {answer.get('daily_limit')} submissions left today (UTC); "
                     f"the count resets at {answer.get('resets_at')}.")
    return "\n".join(lines)
