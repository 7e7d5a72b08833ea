"""``tpugraphs tune``: an Optuna study over a method's settings per collection, with honest selection.

- ``command.py``: the command line (standard library only at import time);
- ``runner.py``: ``tune()``, every argument checked before any trial, then each collection's study;
- ``space.py``: the search space, from the settings schema and ``--space``;
- ``split.py``: the valid graphs split by graph into a search half and a held-out half;
- ``fitting.py``: one set of settings fitted and scored as ``solve`` would;
- ``study.py``: the storage, what a study is for, the trials and their pruning;
- ``selection.py``: the best trial against the defaults on the held-out half, and PARAMS.json's entry;
- ``plots.py``: the pictures beside PARAMS.json.

Optuna is the ``tune`` extra (``pip install 'tpugraphs-kit[tune]'``); nothing else in the kit imports it.
"""
