"""The submission client's former address: it lives in ``competition.data.leaderboard_client`` (standard
library only, so ``tpugraphs submit`` needs no part of the leaderboard). Kept for scripts and
notebooks that import it from here."""

from competition.data.leaderboard_client import (  # noqa: F401
    USER_AGENT,
    ServerRefused,
    ServerUnreachable,
    competition_info,
    dropped_hint,
    format_answer,
    format_status,
    my_submissions,
    upload_submission,
)
