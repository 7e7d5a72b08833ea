"""Layout configs drawn from the menus of given configs (``tpugraphs rank --sample`` on a program that has
configs: its measured ones or a ``--configs`` file), the way the dataset's random search draws them.
A program without configs is sampled from its layout space instead (``solutions.kinds.layout_space``).

The configurable nodes whose settings are identical in every given config form one layout group (the
dataset ties them); each group picks one setting of its menu: the settings its nodes take in the given
configs, and each with its two minor-most dimensions swapped (the compiler's local move).
"""

from __future__ import annotations

import numpy as np

from solutions.kinds.layout_space import SLOTS, TENSORS


def layout_groups(configs: np.ndarray) -> np.ndarray:
    """``(nc,)`` group of each configurable node: nodes whose settings are identical in every config
    are tied (the dataset's layout groups), so a sampled config keeps them equal."""
    columns = np.ascontiguousarray(configs.transpose(1, 0, 2).reshape(configs.shape[1], -1))
    _, group = np.unique(columns, axis=0, return_inverse=True)
    return group.reshape(-1)


def _minor_swap(setting: np.ndarray) -> np.ndarray:
    """The setting with the two minor-most dims of each set tensor swapped (the compiler's local move)."""
    out = setting.copy()
    for t in range(len(TENSORS)):
        block = out[t * SLOTS:(t + 1) * SLOTS]
        if block[0] >= 0 and block[1] >= 0:
            block[0], block[1] = block[1], block[0]
    return out


def sample_layout_configs(configs: np.ndarray, count: int, *, seed: int = 0) -> np.ndarray:
    """``count`` distinct configurations (fewer when the space is smaller) drawn the way the random
    search draws them: every layout group picks one setting of its menu.

    A group's menu is the settings its nodes take in ``configs`` (the program's measured or given
    configs) plus, for each, the two minor-most dims swapped; so only the slots the dataset sets are
    set, and tied nodes stay tied. Shapes: ``configs`` (c, nc, 18) -> (count', nc, 18).
    """
    if count < 1:
        raise ValueError(f"count must be >= 1, got {count}")
    rng = np.random.default_rng(seed)
    group = layout_groups(configs)
    leaders = [int(np.flatnonzero(group == g)[0]) for g in range(group.max() + 1)]
    menus = []
    for leader in leaders:
        seen = np.unique(configs[:, leader, :], axis=0)
        moves = np.array([_minor_swap(s) for s in seen])
        menus.append(np.unique(np.concatenate([seen, moves]), axis=0))
    space = float(np.prod([len(m) for m in menus], dtype=np.float64))
    wanted = int(min(count, space))
    chosen: dict[bytes, np.ndarray] = {}
    for _ in range(20 * wanted):
        if len(chosen) == wanted:
            break
        picks = [m[rng.integers(len(m))] for m in menus]
        config = np.stack([picks[g] for g in group]).astype(np.float32)
        chosen.setdefault(config.tobytes(), config)
    return np.stack(list(chosen.values()))
