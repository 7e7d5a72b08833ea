"""The models that rank a program's candidates (one ``--model`` folder or several) and one score per config.

A ``ModelFolder`` is what one ``tpugraphs solve`` run saved for the program's collection: one model or a
seed ensemble. A ``Scorer`` holds every folder given and scores configurations with them:

- one folder with one model: its own score (lower = predicted faster);
- otherwise a blend: each model's scores as z-scores over the ranked candidates (their mean and spread
  fixed once, on the candidates), averaged over a folder's seed models, then over the folders; the
  unit is the candidates' standard deviation.

The kit's layout models compute some features relative to the program's other configs (the gbdt
centres each feature per graph), so a config's score depends on the configs scored with it. The
``Scorer`` probes each model once: a model whose scores do not change with the company is given extra
configs alone; any other scores them appended to the ranked candidates a few at a time, each call
holding the configs they are compared with (the reference, the candidate), so that ``--explain`` compares
configs as they score side by side, in (nearly) the context the ranking used.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from competition.collections import Collection
from solutions.kinds.program import Program, RankError

CONTEXT_SHARE = 0.01  # extra configs scored with the candidates per call, as a share of their number


@dataclass
class ModelFolder:
    """One ``--model`` folder: its collection, why that one, the method and its model(s)."""

    dir: Path
    collection: Collection
    why: str
    method: str
    models: list

    def describe(self) -> dict:
        return {"method": self.method, "collection": self.collection.name, "dir": str(self.dir),
                "models": len(self.models), "chosen_because": self.why or None}

    @property
    def label(self) -> str:
        return f"{self.method} ({self.dir})"


@dataclass
class Scorer:
    """Scores configs of ``program`` with every folder's models, in the context of ``candidates``."""

    program: Program
    folders: list[ModelFolder]
    candidates: np.ndarray  # the ranked configs (c, ...)
    raw: list[np.ndarray] = field(default_factory=list)  # per folder, (models, c) scores of the candidates
    _context_free: dict[tuple[int, int], bool] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.raw = [np.stack([self._predict(m, f.collection, self.candidates) for m in f.models])
                    for f in self.folders]
        self._center = [values.mean(axis=1, keepdims=True) for values in self.raw]
        self._scale = [np.where(values.std(axis=1, keepdims=True) > 0, values.std(axis=1, keepdims=True), 1.0)
                       for values in self.raw]

    @property
    def single(self) -> bool:
        """One folder with one model: scores are the model's own, not a blend."""
        return len(self.folders) == 1 and len(self.folders[0].models) == 1

    @property
    def unit(self) -> str:
        return "the model's score" if self.single else \
            "the blended score (standard deviations of each model's scores over the candidates)"

    def _predict(self, model, collection: Collection, configs: np.ndarray) -> np.ndarray:
        graph = self.program.graph.with_configs(configs)
        values = np.asarray(model.predict(collection, graph), dtype=np.float64)
        if values.shape != (len(configs),) or not np.isfinite(values).all():
            raise RankError(f"a model returned unusable scores for {self.program.path} (shape "
                            f"{values.shape}, finite: {bool(np.isfinite(values).all())})")
        return values

    def folder_scores(self, raw: list[np.ndarray] | None = None) -> list[np.ndarray]:
        """Per folder, (c,) the mean z-score of its models (of the candidates unless ``raw`` is given)."""
        raw = self.raw if raw is None else raw
        return [((values - c) / s).mean(axis=0) for values, c, s in zip(raw, self._center, self._scale,
                                                                            strict=True)]

    def blend(self, raw: list[np.ndarray] | None = None) -> np.ndarray:
        """(c,) one score per config: the model's own for a single model, else the blend."""
        raw = self.raw if raw is None else raw
        if self.single:
            return raw[0][0]
        return np.mean(self.folder_scores(raw), axis=0)

    def score(self, configs: np.ndarray, anchors: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """``(scores (k,), anchor scores (k, a))``: the score of each of ``configs`` and, for each, those of
        ``anchors`` (configs to compare it with, e.g. the reference) scored in the same call.

        Each model scores them in the ranking's context: alone for a model whose scores do not depend
        on the company; else appended to the candidates, a few at a time (at most ``CONTEXT_SHARE`` of
        their number per call), with the anchors in every call, so that a config is compared with the
        anchors as they scored beside it."""
        dtype = self.candidates.dtype
        configs = configs.astype(dtype)
        anchors = np.zeros((0, *configs.shape[1:]), dtype=dtype) if anchors is None else anchors.astype(dtype)
        a, step = len(anchors), max(1, int(len(self.candidates) * CONTEXT_SHARE))
        raw = []  # per folder, (models, k * (a + 1)): per config, its anchors' scores then its own
        for f, folder in enumerate(self.folders):
            rows = []
            for m, model in enumerate(folder.models):
                if self._is_context_free(f, m):
                    values = self._predict(model, folder.collection, np.concatenate([anchors, configs]))
                    rows.append(np.concatenate([np.concatenate([values[:a], [v]]) for v in values[a:]]))
                    continue
                parts = []
                for i in range(0, len(configs), step):
                    chunk = configs[i:i + step]
                    joint = np.concatenate([self.candidates, anchors, chunk])
                    values = self._predict(model, folder.collection, joint)[len(self.candidates):]
                    parts += [np.concatenate([values[:a], [v]]) for v in values[a:]]
                rows.append(np.concatenate(parts))
            raw.append(np.stack(rows))
        blended = self.blend(raw).reshape(len(configs), a + 1)
        return blended[:, a], blended[:, :a]

    def _is_context_free(self, f: int, m: int) -> bool:
        """Whether model ``m`` of folder ``f`` scores a config the same whatever configs come with it."""
        key = (f, m)
        if key not in self._context_free:
            few = min(2, len(self.candidates))
            folder = self.folders[f]
            alone = self._predict(folder.models[m], folder.collection, self.candidates[:few])
            self._context_free[key] = bool(np.allclose(alone, self.raw[f][m, :few], rtol=1e-9,
                                                       atol=1e-12))
        return self._context_free[key]
