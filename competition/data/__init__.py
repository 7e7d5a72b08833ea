"""The data layer: the released npz format and everything that reads, writes, fetches or makes it.

- ``graphs``: the graph format (``TileGraph``, ``LayoutGraph``), the checked loader and the split listing;
  ``npz``: bounded-memory reading of npz members; ``hlo``: the format's vocabularies (opcodes, columns).
- ``compact``, ``processed_cache``: compact layout configs and the memory-mapped processed cache.
- ``locate``: finding a data directory (Kaggle input, a given folder, the embedded competition).
- ``remote``: the clients of other machines: the Kaggle download and submission, the upstream mirror,
  a leaderboard of the kit.
- ``protos``: raw tuning protos -> npz (the featurizer); ``inspection``: what an npz holds;
  ``description`` (with ``layout_description``): what a whole data tree holds (``tpugraphs stats``).
- ``synth``: the embedded synthetic competition; ``prepare``: a hidden-label competition carved from
  labelled graphs.

Nothing here decides how a submission is judged; that is ``competition`` itself (the rules).

The remote clients' 1.0 paths (``competition.data.download``, ``kaggle_api``, ``leaderboard_client``) keep
working (``PATHS_1_0``).
"""

from __future__ import annotations

from competition.moved import keep_paths

#: 1.0 import path -> the module that holds it now.
PATHS_1_0 = {
    "competition.data.download": "competition.data.remote.download",
    "competition.data.kaggle_api": "competition.data.remote.kaggle_api",
    "competition.data.leaderboard_client": "competition.data.remote.leaderboard_client",
}

keep_paths(PATHS_1_0)
