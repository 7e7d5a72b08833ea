"""Teams and their tokens: registering, signing in, new tokens, disqualification, the public name."""

from __future__ import annotations

from sqlalchemy import func, select

from leaderboard import auth, sessions
from leaderboard.errors import Conflict, NotFound, Unauthorised
from leaderboard.models import MAX_ID, Team, utcnow
from leaderboard.service.competition import CompetitionStore, breaks_the_line
from leaderboard.views import TeamInfo

MAX_TEAM_NAME = 100


def _check_team_name(name: str) -> str:
    name = name.strip()
    if not name:
        raise ValueError("a team name cannot be empty")
    if len(name) > MAX_TEAM_NAME:
        raise ValueError(f"a team name has at most {MAX_TEAM_NAME} characters, got {len(name)}")
    if any(breaks_the_line(ch) for ch in name):
        raise ValueError("a team name cannot contain control characters or line separators")
    return name


class Teams(CompetitionStore):
    """Teams and tokens."""

    def add_team(self, name: str) -> tuple[TeamInfo, str]:
        """Register a team; returns it and its token (shown once: only a hash is stored)."""
        name = _check_team_name(name)
        self.config()
        with self.db.writer() as session:
            clash = session.scalar(select(Team.name).where(func.lower(Team.name) == name.lower()))
            if clash is not None:
                raise Conflict(f"a team called {clash!r} already exists")
            team = Team(name=name, token_hash="", created_at=utcnow())
            session.add(team)
            session.flush()
            token, team.token_hash = auth.new_token(team.id)
            return TeamInfo(team.id, team.name, False), token

    def authenticate(self, token: str | None) -> TeamInfo:
        """The team a token belongs to; Unauthorised for a missing, malformed or wrong token."""
        refusal = Unauthorised("A valid team token is required (Authorization: Bearer TOKEN).")
        parsed = auth.parse_token(token) if token else None
        if parsed is None or not 1 <= parsed[0] <= MAX_ID:  # an id the database cannot hold is no team
            raise refusal
        with self.db.reader() as session:
            team = session.get(Team, parsed[0])
            stored = team.token_hash if team is not None else "0" * 64
            if not auth.token_matches(token, stored) or team is None:  # type: ignore[arg-type]
                raise refusal
            return TeamInfo(team.id, team.name, team.disqualified_at is not None)

    def sign_in(self, token: str | None, browser_key: str | None) -> tuple[TeamInfo, str]:
        """A web session for the team of ``token``, bound to ``browser_key``: ``(team, cookie value)``."""
        team = self.authenticate(token)
        return team, self.session_for(team.id, browser_key)

    def session_for(self, team_id: int, browser_key: str | None) -> str:
        """A web session cookie value for a team already signed in (e.g. confirming it for this browser)."""
        with self.db.reader() as session:
            token_hash = session.scalar(select(Team.token_hash).where(Team.id == team_id))
        if token_hash is None:
            raise NotFound(f"no team {team_id}")
        return sessions.new_session(team_id, token_hash, browser_key)

    def session_team(self, value: str | None) -> tuple[TeamInfo, str] | None:
        """The team of a session cookie and the browser key digest it was made with; None if not valid."""
        parsed = sessions.parse_session(value)
        if parsed is None or not 1 <= parsed[0] <= MAX_ID:
            return None
        with self.db.reader() as session:
            team = session.get(Team, parsed[0])
            if team is None or not sessions.session_valid(value, team.token_hash):  # type: ignore[arg-type]
                return None
            return TeamInfo(team.id, team.name, team.disqualified_at is not None), parsed[1]

    def reset_token(self, name: str) -> tuple[TeamInfo, str]:
        """Give a team a new token (a lost or leaked one); the old token stops working at once."""
        with self.db.writer() as session:
            team = session.scalar(select(Team).where(Team.name == name))
            if team is None:
                raise NotFound(f"no team called {name!r}")
            token, team.token_hash = auth.new_token(team.id)
            return TeamInfo(team.id, team.name, team.disqualified_at is not None), token

    def disqualify(self, name: str, *, reason: str | None = None, undo: bool = False) -> TeamInfo:
        """Disqualify a team (off both boards, uploads refused) or, with ``undo``, reinstate it."""
        with self.db.writer() as session:
            team = session.scalar(select(Team).where(Team.name == name))
            if team is None:
                raise NotFound(f"no team called {name!r}")
            team.disqualified_at = None if undo else utcnow()
            team.disqualified_reason = None if undo else reason
            return TeamInfo(team.id, team.name, not undo)

    def public_team(self, team_id: int) -> TeamInfo:
        """A team as anyone may see it (its name); NotFound for a disqualified one or any other id."""
        missing = NotFound(f"There is no team {team_id} on the leaderboard.")
        if not 1 <= team_id <= MAX_ID:
            raise missing
        with self.db.reader() as session:
            team = session.get(Team, team_id)
            if team is None or team.disqualified_at is not None:
                raise missing
            return TeamInfo(team.id, team.name, False)

