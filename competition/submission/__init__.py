"""The submission rules: the one place that decides whether a submission file is valid.

A submission is a CSV with the columns ``ID`` and ``TopConfigs`` (docs/competition.md, Submission format).
``validate_submission`` streams a file line by line and reports every problem it finds (up to a cap), each
with a stable rule code, the line, the ID and a message that says what was received and what is expected.
``parse_top_configs`` is the per-row rule on its own, for the Kaggle-contract ``score()`` that
receives a DataFrame; ``validate_rows`` applies the ID rules (missing, duplicate, unknown) and the
per-row rule to already-parsed rows. ``tpugraphs validate``, ``tpugraphs score``, ``score()`` and the
leaderboard server all call this package.

Where each part lives: ``rules`` (the rule table, problems, the per-row rule and its messages),
``ids`` (the ID rules and their hints), ``reader`` (streaming, sniffing, CSV splitting, size caps),
``report`` (the text ``tpugraphs validate`` prints). The expected IDs of a data directory come from
the data layer: ``competition.data.graphs.expected_from_data_dir``.

Accepted, as Kaggle accepts: rows in any order, CRLF line endings, a UTF-8 byte-order mark, no final
newline, one empty line at the very end, standard CSV quoting, the two columns in either order, ASCII
spaces around indices, tile rows longer than 5 (only the first 5 count, but every listed index must
be a distinct config index) or shorter when the graph has fewer than 5 configs. Everything else is
refused with one of the rule codes of ``RULES``.

Messages are safe to show participants: they mention only what the participant sent, the public test
IDs and the public config counts of test graphs, never anything about the hidden runtimes.

>>> from competition.collections import COLLECTION_BY_NAME
>>> parse_top_configs("4;0; 2;1;3", COLLECTION_BY_NAME["tile:xla"], 7)
array([4, 0, 2, 1, 3])
>>> parse_top_configs("0;2", COLLECTION_BY_NAME["layout:xla:random"], 3)
Traceback (most recent call last):
  ...
competition.errors.RowError: layout row must be a full permutation of 0..2; 1 config is missing, e.g. 1
"""

from competition.errors import RowError
from competition.submission.ids import expected_from_own_rows, validate_rows
from competition.submission.reader import DEFAULT_MAX_BYTES, validate_submission
from competition.submission.report import format_problems
from competition.submission.rules import (
    DEFAULT_MAX_PROBLEMS,
    RULES,
    Problem,
    ValidationResult,
    parse_top_configs,
)

__all__ = [
    "DEFAULT_MAX_BYTES",
    "DEFAULT_MAX_PROBLEMS",
    "RULES",
    "Problem",
    "RowError",
    "ValidationResult",
    "expected_from_own_rows",
    "format_problems",
    "parse_top_configs",
    "validate_rows",
    "validate_submission",
]
