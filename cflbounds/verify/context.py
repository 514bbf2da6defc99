"""What a claim check is given: scale, seed, device, executor, and where its tables go."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from .._validation import Options

__all__ = ["SCALES", "VerifyContext"]

SCALES = ("smoke", "default", "paper")
SCALE_OPTION = Options(SCALES)


@dataclass
class VerifyContext:
    """Settings shared by the checks of one ``verify`` call.

    ``scale``: ``smoke`` (seconds; the test suite), ``default`` (minutes on 2 CPU cores),
    ``paper`` (the papers' experiment sizes; GPU or Ray). ``tables`` collects the tidy
    result tables of every check; ``cache`` lets checks share an experiment.
    """

    scale: str = "default"
    seed: int = 0
    device: str = "cpu"
    executor: str = "local"
    workdir: Path | None = None  # where sweeps keep their resumable stores (a temp dir if None)
    progress: bool | None = None  # progress bars: None = only on an interactive terminal
    tables: dict = field(default_factory=dict)
    cache: dict = field(default_factory=dict)

    def save_table(self, name: str, frame: pd.DataFrame) -> None:
        self.tables[name] = frame

    def shared(self, key, compute):
        """``compute()`` once per key per context (an experiment used by several claims)."""
        if key not in self.cache:
            self.cache[key] = compute()
        return self.cache[key]
