"""Teams, their tokens and their browsers' sessions: registering, renaming, signing in and out."""

from __future__ import annotations

import secrets
from datetime import datetime

from sqlalchemy import delete, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from leaderboard import auth, sessions
from leaderboard.errors import Conflict, NotFound, Unauthorised
from leaderboard.models import MAX_ID, Team, WebSession, utcnow
from leaderboard.names import check_team_name, name_key
from leaderboard.service.competition import CompetitionStore
from leaderboard.views import TeamInfo

CONFIRM_CHANGED = ("This browser's sign-in changed after the page asked you to confirm it (another site "
                   "may have replaced it): nothing was confirmed. Check the team named below; sign out "
                   "and sign in with your own token if it is not yours.")


def _info(team: Team) -> TeamInfo:
    return TeamInfo(team.id, team.name, team.disqualified_at is not None)


def _free_session_id(session: Session) -> int:
    """A random session id no session has (ids run from 1 to MAX_ID)."""
    while True:
        candidate = secrets.randbelow(MAX_ID) + 1
        if session.get(WebSession, candidate) is None:
            return candidate


def _look_alike(session: Session, key: str, *, besides: int | None = None) -> Conflict | None:
    """A Conflict naming the team whose name looks like ``key``'s, if there is one."""
    clash = session.scalar(select(Team).where(Team.name_key == key))
    if clash is None or clash.id == besides:
        return None
    return Conflict(f"a team called {clash.name!r} (id {clash.id}) already exists, and the name looks the "
                    "same to a reader (case, spacing and look-alike letters are not told apart); choose "
                    "another name")


class Teams(CompetitionStore):
    """Teams, tokens and web sessions."""

    def add_team(self, name: str) -> tuple[TeamInfo, str]:
        """Register a team; returns it and its token (shown once: only a hash is stored).

        ValueError for an unusable name; Conflict, naming the existing team, for one that looks like it.
        """
        name = check_team_name(name)
        key = name_key(name)
        self.config()
        try:
            with self.db.writer() as session:
                if (clash := _look_alike(session, key)) is not None:
                    raise clash
                team = Team(name=name, name_key=key, token_hash="", created_at=utcnow())
                session.add(team)
                session.flush()
                token, team.token_hash = auth.new_token(team.id)
                return _info(team), token
        except IntegrityError:  # added by another process between the check and the insert
            with self.db.reader() as session:
                raise _look_alike(session, key) or Conflict(f"a team like {name!r} already exists") from None

    def rename_team(self, name: str, new_name: str) -> TeamInfo:
        """Give the team called ``name`` the name ``new_name``; Conflict when that looks like another
        team's."""
        new_name = check_team_name(new_name)
        key = name_key(new_name)
        try:
            with self.db.writer() as session:
                team = self._team_named(session, name)
                if (clash := _look_alike(session, key, besides=team.id)) is not None:
                    raise clash
                team.name, team.name_key = new_name, key
                return _info(team)
        except IntegrityError:
            with self.db.reader() as session:
                raise _look_alike(session, key) or Conflict(f"a team like {new_name!r} exists") from None

    @staticmethod
    def _team_named(session: Session, name: str) -> Team:
        """The team whose name looks like ``name`` (as a host types it); NotFound otherwise."""
        team = session.scalar(select(Team).where(Team.name_key == name_key(name)))
        if team is None:
            raise NotFound(f"no team called {name!r}")
        return team

    def team_ids(self) -> list[int]:
        """The ids of every registered team (disqualified ones included)."""
        with self.db.reader() as session:
            return list(session.scalars(select(Team.id)))

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
            return _info(team)

    # -- web sessions (leaderboard.sessions) -------------------------------------------------------

    def sign_in(self, token: str | None, browser_key: str | None) -> tuple[TeamInfo, str]:
        """A new web session for the team of ``token``, bound to ``browser_key``: ``(team, cookie value)``."""
        team = self.authenticate(token)
        return team, self.start_session(team.id, browser_key)

    def start_session(self, team_id: int, browser_key: str | None, *, now: datetime | None = None) -> str:
        """A new session of ``team_id`` bound to ``browser_key``; its cookie value.

        Its id is random (the cookie says nothing about how many sign-ins the site has had). It replaces
        the team's earlier sessions made in the same browser (the same key), so signing in again from a
        browser costs no one else anything. Past ``MAX_SESSIONS_PER_TEAM`` the team's most recent other
        sign-in ends: repeated sign-ins end each other, never the sessions that were there before them.
        """
        secret, stored = sessions.new_secret()
        digest = sessions.key_digest(browser_key)
        for attempt in range(5):
            try:
                with self.db.writer() as session:
                    session_id = _free_session_id(session)
                    if digest != sessions.UNBOUND:
                        same_browser = (WebSession.team_id == team_id) & (WebSession.browser_digest == digest)
                        session.execute(delete(WebSession).where(same_browser)
                                        .execution_options(synchronize_session=False))
                    others = session.execute(
                        select(WebSession.id).where(WebSession.team_id == team_id)
                        .order_by(WebSession.created_at.desc(), WebSession.id.desc())).scalars().all()
                    if len(others) >= sessions.MAX_SESSIONS_PER_TEAM:
                        session.execute(delete(WebSession).where(WebSession.id.in_(
                            others[:len(others) - sessions.MAX_SESSIONS_PER_TEAM + 1]))
                            .execution_options(synchronize_session=False))
                    session.add(WebSession(id=session_id, team_id=team_id, secret_hash=stored,
                                           created_at=now or utcnow(), browser_digest=digest))
                return sessions.cookie_value(session_id, secret)
            except IntegrityError:  # the same random id drawn at once by another process (PostgreSQL)
                if attempt == 4:
                    raise
        raise AssertionError("unreachable")

    def session_of(self, value: str | None, *, now: datetime | None = None) -> sessions.SignedIn | None:
        """The session a cookie value names, or None (malformed, ended, expired or of no team)."""
        parsed = sessions.parse_cookie(value)
        if parsed is None or not 1 <= parsed[0] <= MAX_ID:
            return None
        with self.db.reader() as session:
            row = session.get(WebSession, parsed[0])
            if row is None or not sessions.secret_matches(parsed[1], row.secret_hash):
                return None
            if row.created_at + sessions.SESSION_LIFETIME <= (now or utcnow()):
                return None
            team = session.get(Team, row.team_id)
            return sessions.SignedIn(_info(team), row.id, row.browser_digest, row.created_at)

    def end_session(self, value: str | None) -> None:
        """Sign out: the session the cookie names ends (its cookie value no longer signs in)."""
        signed_in = self.session_of(value)
        if signed_in is not None:
            with self.db.writer() as session:
                session.execute(delete(WebSession).where(WebSession.id == signed_in.session_id))

    def confirm_session(self, value: str | None, shown_session: int, shown_team: int,
                        browser_key: str | None) -> tuple[TeamInfo, str]:
        """The person confirmed the session the page showed (``shown_session`` of team ``shown_team``):
        it is replaced by a new one bound to this browser; ``(team, new cookie value)``.

        Conflict when the cookie no longer names that session (re-planted since the page was shown).
        """
        signed_in = self.session_of(value)
        if signed_in is None or (signed_in.session_id, signed_in.team.id) != (shown_session, shown_team):
            raise Conflict(CONFIRM_CHANGED)
        new_value = self.start_session(signed_in.team.id, browser_key)
        with self.db.writer() as session:
            session.execute(delete(WebSession).where(WebSession.id == signed_in.session_id))
        return signed_in.team, new_value

    def sweep_sessions(self, *, now: datetime | None = None) -> int:
        """Delete the sessions past their lifetime; how many."""
        cutoff = (now or utcnow()) - sessions.SESSION_LIFETIME
        with self.db.writer() as session:
            return session.execute(delete(WebSession).where(WebSession.created_at <= cutoff)
                                   .execution_options(synchronize_session=False)).rowcount

    # -- the host's operations ----------------------------------------------------------------------

    def reset_token(self, name: str) -> tuple[TeamInfo, str]:
        """Give a team a new token (a lost or leaked one); the old token and every session of the team
        stop working at once."""
        with self.db.writer() as session:
            team = self._team_named(session, name)
            token, team.token_hash = auth.new_token(team.id)
            session.execute(delete(WebSession).where(WebSession.team_id == team.id)
                            .execution_options(synchronize_session=False))
            return _info(team), token

    def disqualify(self, name: str, *, reason: str | None = None, undo: bool = False) -> TeamInfo:
        """Disqualify a team (off both boards, uploads refused) or, with ``undo``, reinstate it."""
        with self.db.writer() as session:
            team = self._team_named(session, name)
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
