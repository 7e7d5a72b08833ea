"""The competition kit's core: the rules, the data tools and the ``tpugraphs`` command line.

- The rules (``competition.sources.RULE_FILES``): the collections and task kinds, the metric, the
  validator and the scorer (``score``: Kaggle's contract).
- Built on the scorer: ``stats/`` (intervals, shake-up, ensembles) and ``predictions``.
- ``data/``: reading, writing, fetching and making the released files (the embedded competition,
  the featurizer, the processed cache).
- ``cli`` and ``commands/``: the command line.

Light on purpose (numpy; pandas only for the Kaggle-contract ``score``): never imports torch.
"""

from competition.collections import COLLECTION_BY_NAME, COLLECTION_NAMES, COLLECTIONS, Collection
from competition.errors import DataFormatError, ParticipantVisibleError

__all__ = [
    "COLLECTIONS",
    "COLLECTION_BY_NAME",
    "COLLECTION_NAMES",
    "Collection",
    "DataFormatError",
    "ParticipantVisibleError",
    "score",
]


def __getattr__(name: str):
    # Lazy: `competition.score` pulls in pandas, which the CLI's fast paths never need.
    if name == "score":
        from competition.kaggle_metric import score

        return score
    raise AttributeError(name)
