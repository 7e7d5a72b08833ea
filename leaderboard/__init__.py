"""A self-hostable leaderboard for the competition: one scorer, honest limits, no leaks.

The server scores every upload synchronously with the kit's own scorer (``competition.scoring``),
so a leaderboard number and a ``tpugraphs score`` number are the same number. It keeps its state in
one SQL database (SQLite for a small competition, PostgreSQL for several server processes):

- ``models``: the tables (competition settings and hidden solution, teams, submissions, quotas);
- ``database``: engine set-up, read and write transactions that serialise correctly on both;
- ``service``: the rules (tokens, deadline, daily limit, final selection, rescoring, reveal);
  ``errors``: its refusals with their HTTP status; ``views``: the plain snapshots it hands out;
- ``boards``: public and private rankings and their CSV export; ``board_cache`` keeps them briefly;
- ``scorer``: the parsed solution kept in memory and a time-limited scoring call;
  ``version``: the scorer version recorded with every score;
- ``app``, ``deps`` and ``routers``: the HTTP API and the server-rendered pages (``templates/``,
  ``static/``), both reaching their state through ``deps``; ``csrf``: the forms' CSRF token and
  origin check; ``settings``: per-process server settings; ``auth``: team tokens; ``sessions``: the
  pages' sign-ins; ``names``: team names unique by what a reader sees; ``throttle``: wrong tokens per
  claimed team and per address; ``uploads``: an upload checked before its body is read, held on
  disk; ``server``: uvicorn's protocol with deadlines for slow clients; ``access_log``: secrets out of
  the log;
- ``commands`` and ``actions``: ``tpugraphs leaderboard ...`` for hosts (``tpugraphs submit``, the
  participant's side, is in ``competition``);
- ``codabench``: the same scorer exported as a Codabench scoring program.

Host guide: docs/leaderboard.md.
"""
