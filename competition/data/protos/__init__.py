"""Raw TpuGraphs tuning protos and plain HLO modules: a small wire-format decoder, the schemas it reads,
and the featurizer (``module.py``, ``layout.py``, ``tile.py``).

See ``featurize.py`` (and docs/featurizer.md) for ``featurize_file`` / ``featurize_files``.
"""
