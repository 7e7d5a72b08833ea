"""The participant's side of ``tpugraphs submit``: upload a file to a leaderboard server of the kit.

Standard library only (urllib), so submitting needs nothing beyond the kit's light install.
Every failure becomes one of two exceptions with a message worth printing as is:
``ServerUnreachable`` (no answer: wrong URL, server down, network) and ``ServerRefused`` (the server
answered with an error; ``.detail`` is its participant-safe message).
"""

from __future__ import annotations

import http.client
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


def _multipart(field: str, file_name: str, content: bytes,
               fields: dict[str, str] | None = None) -> tuple[bytes, str]:
    """A multipart/form-data body: text ``fields`` first, then the file."""
    boundary = "tpugraphs-" + secrets.token_hex(16)
    safe_name = file_name.replace('"', "_").replace("\r", "_").replace("\n", "_")
    parts = [
        f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n'
        f"Content-Type: text/plain; charset=utf-8\r\n\r\n{value}\r\n".encode()
        for name, value in (fields or {}).items()
    ]
    head = (
        f"--{boundary}\r\n"
        f'Content-Disposition: form-data; name="{field}"; filename="{safe_name}"\r\n'
        "Content-Type: text/csv\r\n\r\n"
    ).encode()
    body = b"".join(parts) + head + content + f"\r\n--{boundary}--\r\n".encode()
    return body, f"multipart/form-data; boundary={boundary}"


def dropped_hint(server: str) -> str:
    """What to do when the answer to an upload never came: it may have been scored and counted."""
    return ("The upload may have reached the server and been scored, and then it counts toward "
            f"today's limit. Check with 'tpugraphs submit --status --server {server}' (or the My submissions "
            "page) before uploading it again.")


def _request(request: urllib.request.Request, server: str, timeout: float, *, upload: bool = False) -> dict:
    """Send ``request``; with ``upload``, a connection lost after the file was sent says it may have
    counted."""
    after_send = f"\n{dropped_hint(server)}" if upload else ""
    try:
        # S310: the URL is checked by the caller
        with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310
            return json.loads(response.read().decode("utf-8"))
    except urllib.error.HTTPError as err:
        raw = err.read().decode("utf-8", "replace")
        try:
            payload = json.loads(raw)
        except ValueError:
            payload = None
        if isinstance(payload, dict) and isinstance(payload.get("detail"), str):
            raise ServerRefused(err.code, payload["detail"], payload) from None
        raise ServerRefused(err.code,
                            f"HTTP {err.code} {err.reason} (is {server} a tpugraphs leaderboard?)") from None
    except urllib.error.URLError as err:
        raise ServerUnreachable(f"cannot reach the leaderboard server at {server}: {err.reason}") from None
    # urllib wraps what fails while connecting and sending as URLError (above): the file did not
    # arrive whole. What follows fails while waiting for or reading the answer: it may have counted.
    except TimeoutError:
        raise ServerUnreachable(f"the leaderboard server at {server} did not answer within {timeout:g} s"
                                + after_send) from None
    except (ConnectionError, OSError, http.client.HTTPException) as err:
        raise ServerUnreachable(f"connection to the leaderboard server at {server} failed: "
                                f"{err or err.__class__.__name__}" + after_send) from None
    except ValueError:
        raise ServerUnreachable(f"{server} answered something that is not JSON; is it a tpugraphs "
                                "leaderboard?") from None


def competition_info(server: str, *, timeout: float = 30.0) -> dict:
    """``GET /api/competition``: name, deadline, limits, upload cap."""
    request = urllib.request.Request(server.rstrip("/") + "/api/competition",
                                     headers={"Accept": "application/json", "User-Agent": USER_AGENT})
    return _request(request, server, timeout)


def upload_submission(server: str, token: str, path: str | Path, *, timeout: float = 300.0,
                      description: str | None = None) -> dict:
    """Upload ``path`` (with an optional ``description``); returns the server's JSON answer for a scored
    submission.

    Checks the server's upload cap and deadline first so a refusal comes before a long upload.
    """
    path = Path(path)
    info = competition_info(server, timeout=min(timeout, 30.0))
    size = path.stat().st_size
    cap = info.get("max_upload_bytes")
    if isinstance(cap, int) and size > cap:
        raise ServerRefused(413, f"{path.name} is {size / 2**20:.1f} MiB; the server accepts at most "
                                 f"{cap / 2**20:.1f} MiB")
    description = " ".join(description.split()) if description else None
    limit = info.get("max_description_chars")
    if description and isinstance(limit, int) and len(description) > limit:
        raise ServerRefused(422,
                            f"the description (-m) has {len(description)} characters; the server takes at "
                            f"most {limit}. Nothing was uploaded.")
    fields = {"description": description} if description else None
    body, content_type = _multipart("file", path.name, path.read_bytes(), fields)
    request = urllib.request.Request(
        server.rstrip("/") + "/api/submissions", data=body, method="POST",
        headers={"Authorization": f"Bearer {token}", "Content-Type": content_type,
                 "Accept": "application/json", "User-Agent": USER_AGENT},
    )
    return _request(request, server, timeout, upload=True)


def my_submissions(server: str, token: str, *, timeout: float = 30.0) -> dict:
    """``GET /api/submissions/mine``: the team's quota and submissions, newest first."""
    request = urllib.request.Request(server.rstrip("/") + "/api/submissions/mine",
                                     headers={"Authorization": f"Bearer {token}",
                                              "Accept": "application/json",
                                              "User-Agent": USER_AGENT})
    return _request(request, server, timeout)


def _one_line(text: object) -> str:
    """Text from the server as one terminal line: line separators and control characters become '?'."""
    return "".join(ch if ch.isprintable() else "?" for ch in str(text))


def format_status(mine: dict, *, limit: int = 10) -> str:
    """The team's quota and latest submissions, for a terminal."""
    lines = [f"Team {mine.get('team')}: {mine.get('remaining_today')} of {mine.get('daily_limit')} "
             f"submissions left today (UTC; resets {mine.get('resets_at')})."]
    subs = mine.get("submissions") or []
    if not subs:
        lines.append("No submissions yet.")
    for sub in subs[:limit]:
        score = "" if sub.get("public_score") is None else f"public {sub['public_score']:.6f}"
        lines.append(f"  #{sub.get('id'):<5} {sub.get('submitted_at')}  {sub.get('status'):<8} {score:<16} "
                     f"{_one_line(sub.get('file_name'))}{'  [selected]' if sub.get('selected') else ''}")
    if len(subs) > limit:
        lines.append(f"  ... and {len(subs) - limit} older")
    return "\n".join(lines)


def format_answer(answer: dict) -> str:
    """The server's answer for a scored submission, for a terminal."""
    lines = [f"Submission {answer.get('id')} ({_one_line(answer.get('file_name'))}) {answer.get('status')}."]
    if answer.get("description"):
        lines.append(f"Description: {answer['description']}")
    if answer.get("public_score") is not None:
        lines.append(f"Public score: {answer['public_score']:.10f}")
        for name, value in (answer.get("public_collections") or {}).items():
            lines.append(f"  {name:<20} {value:.6f}")
    if "remaining_today" in answer:
        lines.append(f"{answer['remaining_today']} of {answer.get('daily_limit')} submissions left "
                     f"today (UTC); the count resets at {answer.get('resets_at')}.")
    return "\n".join(lines)
