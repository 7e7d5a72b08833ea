"""The rules of the competition: collections, data format, metric, validator and scorer.

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
