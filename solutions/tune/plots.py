"""Pictures of a study, written beside PARAMS.json: the optimisation history (each trial's search score
and the best so far) and the settings' importance (Optuna's fANOVA over the complete trials), drawn with
matplotlib by Optuna's own plotting (``optuna.visualization.matplotlib``)."""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import optuna


def write_pictures(study: optuna.Study, stem: Path) -> tuple[list[Path], list[str]]:
    """``STEM.history.png`` and ``STEM.importance.png``; also why a picture could not be drawn (too few
    complete trials, settings that never varied)."""
    import matplotlib

    if "matplotlib.pyplot" not in sys.modules:
        matplotlib.use("Agg")  # files only: no window, no display needed
    import matplotlib.pyplot as plt
    from optuna.visualization import matplotlib as plots

    written, skipped = [], []
    complete = study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.COMPLETE,))
    drawings = [("history", plots.plot_optimization_history)]
    if len(complete) >= 2:
        drawings.append(("importance", plots.plot_param_importances))
    else:
        skipped.append(f"importance: {len(complete)} complete trial(s); it needs 2 or more")
    for name, draw in drawings:
        path = stem.with_name(f"{stem.name}.{name}.png")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            try:
                axes = draw(study)
            except (ValueError, RuntimeError, ZeroDivisionError) as exc:
                skipped.append(f"{name}: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}")
                continue
        figure = axes.figure
        figure.set_size_inches(8, 5)
        figure.tight_layout()
        figure.savefig(path, dpi=100)
        plt.close(figure)
        written.append(path)
    return written, skipped
