"""Where a layout graph's configs are kept for the GNN, and the slot digits a step reads from them.

``ConfigStore``: in memory, base-7 packed (c, nc, 3) int32 (6x smaller than the released float32
array; ``competition.data.compact``) or as released. ``CachedConfigStore``: left in the processed
cache's memory-mapped int8 file (``competition.data.processed_cache``), reading only the configs a
step samples. Both give the same digits. ``most_common_rows``: each configurable node's usual row.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from competition.data.compact import (
    LAYOUT_SLOTS,
    LAYOUT_VALUE_MIN,
    pack_layout_configs,
    pack_layout_vector_codes,
)
from competition.data.processed_cache import CachedGraph
from solutions.features.layout_geometry import column_modes

LAYOUT_DIGITS = 7  # a layout slot takes a value in -1..5, stored as the digit value + 1 in 0..6
LAYOUT_SLOTS_PER_ROW = 3 * LAYOUT_SLOTS  # 18: output, input, kernel layout
_DIGIT_WEIGHTS = LAYOUT_DIGITS ** torch.arange(LAYOUT_SLOTS - 1, -1, -1)  # (6,) most significant first


@dataclass
class ConfigStore:
    """The configs of one layout graph, packed (c, nc, 3) int32 or released (c, nc, 18) float32.

    ``digits(index)`` decodes only the configs asked for.
    """

    data: torch.Tensor  # (c, nc, 3) int32 packed, or (c, nc, 18) float32 as released
    packed: bool

    @classmethod
    def from_configs(cls, node_config_feat: np.ndarray, *, packed: bool) -> ConfigStore:
        if packed:
            return cls(torch.from_numpy(pack_layout_configs(node_config_feat)), True)
        return cls(torch.from_numpy(np.ascontiguousarray(node_config_feat, dtype=np.float32)), False)

    @property
    def num_configs(self) -> int:
        return int(self.data.shape[0])

    @property
    def nbytes(self) -> int:
        return self.data.numel() * self.data.element_size()

    def digits(self, index: torch.Tensor | None = None) -> torch.Tensor:
        """Slot digits of the chosen configs: (k,) -> (k, nc, 18) int64 in 0..6 (value + 1; 0 = unset)."""
        data = self.data if index is None else self.data[index]
        if not self.packed:
            return (data - LAYOUT_VALUE_MIN).long()
        packed = data.long().unsqueeze(-1)  # (k, nc, 3, 1)
        digits = torch.div(packed, _DIGIT_WEIGHTS, rounding_mode="floor") % LAYOUT_DIGITS  # (k, nc, 3, 6)
        return digits.flatten(-2)

    def subset(self, index: torch.Tensor) -> ConfigStore:
        """An in-memory store of the configs at ``index`` (k,), in that order."""
        return ConfigStore(self.data[index], self.packed)

    def keep(self, index: np.ndarray) -> ConfigStore:
        """The configs at ``index`` (k,), stored as these are (here: in memory)."""
        return self.subset(torch.from_numpy(np.asarray(index, dtype=np.int64)))


@dataclass
class CachedConfigStore:
    """The configs of one layout graph left in its processed cache (``competition.data.processed_cache``).

    ``rows[i]`` is the file index of kept config ``i`` (the distinct configs when deduplicated).
    ``digits(index)`` reads only those configs from the memory-mapped int8 tensor and then closes
    the map, so the pages it touched leave the process's resident memory between steps.
    """

    graph: CachedGraph
    rows: np.ndarray  # (c,) int64 file index of each kept config

    @property
    def num_configs(self) -> int:
        return int(self.rows.shape[0])

    @property
    def nbytes(self) -> int:
        """Bytes held in memory (the configs themselves stay on disk)."""
        return int(self.rows.nbytes)

    def digits(self, index: torch.Tensor | None = None) -> torch.Tensor:
        """Slot digits of the chosen configs: (k,) -> (k, nc, 18) int64 in 0..6, as ``ConfigStore.digits``."""
        rows = self.rows if index is None else self.rows[np.asarray(index, dtype=np.int64)]
        try:
            values = self.graph.configs_int8(rows)
        finally:
            self.graph.close()
        return torch.from_numpy(values.astype(np.int64) - LAYOUT_VALUE_MIN)

    def keep(self, index: np.ndarray) -> CachedConfigStore:
        """The configs at ``index`` (k,), stored as these are (left in the cache: nothing is read)."""
        return CachedConfigStore(self.graph, self.rows[np.asarray(index, dtype=np.int64)])

    def subset(self, index: torch.Tensor) -> ConfigStore:
        """An in-memory (float32, as released) store of the configs at ``index`` (k,), in that order."""
        rows = self.rows[np.asarray(index, dtype=np.int64)]
        try:
            return ConfigStore(torch.from_numpy(self.graph.configs(rows)), packed=False)
        finally:
            self.graph.close()


def most_common_rows(node_config_feat: np.ndarray, codes: np.ndarray | None = None) -> np.ndarray:
    """Each configurable node's most frequent 18-d row over the file's configs, as digits.

    A search explores around the compiler's default configuration (``default`` files: small moves
    from it), so how far a row is from the node's usual row says how unusual the config is there.
    Computed from the configs alone, so test files have it too. Ties go to the smallest row.

    Shapes: (c, nc, 18) float32 -> (nc, 18) int64 digits in 0..6. ``codes``: the configs' (c, nc)
    row codes when the caller has them already (``pack_layout_vector_codes``).
    """
    configs = np.asarray(node_config_feat)
    if configs.shape[0] == 0:
        return np.zeros(configs.shape[1:], dtype=np.int64)
    first = most_common_config(pack_layout_vector_codes(configs) if codes is None else codes)
    return (configs[first, np.arange(configs.shape[1])] - LAYOUT_VALUE_MIN).astype(np.int64)


def most_common_config(codes: np.ndarray) -> np.ndarray:
    """For each configurable node, the first config holding its most frequent row (ties: smallest code).

    Shapes: (c, nc) int64 row codes (``pack_layout_vector_codes``), c >= 1 -> (nc,) int64 config indices.
    """
    return (codes == column_modes(codes)[None]).argmax(axis=0).astype(np.int64)

