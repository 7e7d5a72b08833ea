"""The data layer: the released npz format and everything that reads, writes, fetches or makes it.

- ``graphs``: the graph format (``TileGraph``, ``LayoutGraph``), the checked loader and the split listing;
  ``npz``: bounded-memory reading of npz members; ``hlo``: the format's vocabularies (opcodes, columns).
- ``compact``, ``processed_cache``: compact layout configs and the memory-mapped processed cache.
- ``locate``: finding a data directory (Kaggle input, a given folder, the embedded competition).
- ``download``, ``kaggle_api``: the Kaggle download and submission, the upstream mirror.
- ``protos``: raw tuning protos -> npz (the featurizer); ``inspection``: what an npz holds;
  ``description`` (with ``layout_description``): what a whole data tree holds (``tpugraphs stats``).
- ``synth``: the embedded synthetic competition; ``prepare``: a hidden-label competition carved from
  labelled graphs.

Nothing here decides how a submission is judged; that is ``competition`` itself (the rules).
"""
