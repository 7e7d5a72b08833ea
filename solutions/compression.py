"""Deprecated name of ``solutions.dedup`` (config de-duplication); kept so saved scripts still import.

Import from ``solutions.dedup`` instead; this alias will be removed in a later release.
"""


from solutions.dedup import (  # noqa: F401
    DEFAULT_POLICY,
    POLICIES,
    DedupResult,
    apply_unique,
    deduplicate_configs,
    unique_node_config_pairs,
    unique_node_config_rows,
    unique_row_index,
)

