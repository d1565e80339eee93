"""The generator's carried state: one market's simulation after its last written day, on disk."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

import numpy as np

from pipelines.embedded_market.files import Defect
from pipelines.embedded_market.model import Moves, SimState

STATE_DIR = ".state"


@dataclass(frozen=True)
class Stored:
    """What `write_embedded_prices` carries from one call to the next for one market."""

    params: dict[str, Any]
    """The parameters the files were written with; other parameters mean starting over."""
    state: SimState
    """The simulation after the last day file written."""
    window: Moves
    """The returns and closes of the last trading days up to `state.day` (for the newsroom)."""
    defects: tuple[Defect, ...]
    """The defect rows written so far (they sit in the first day files)."""


def state_path(root: Path, market: str) -> Path:
    return root / STATE_DIR / f"{market}.npz"


def load(root: Path, market: str) -> Stored | None:
    """The stored state of `market`, or None when there is none or it cannot be read."""
    try:
        with np.load(state_path(root, market), allow_pickle=False) as data:
            meta = json.loads(data["meta"].tobytes().decode())
            state = SimState(
                day=date.fromisoformat(meta["day"]),
                x=data["x"],
                h=data["h"],
                regime=data["regime"],
                log_volume=data["log_volume"],
                factor=data["factor"],
            )
            window = Moves(data["window_days"], data["window_returns"], data["window_closes"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    defects = tuple(Defect(**d) for d in meta["defects"])
    return Stored(meta["params"], state, window, defects)


def save(root: Path, market: str, stored: Stored) -> None:
    """Write the state atomically (a temporary file renamed over the old one)."""
    path = state_path(root, market)
    path.parent.mkdir(parents=True, exist_ok=True)
    meta = {
        "params": stored.params,
        "day": stored.state.day.isoformat(),
        "defects": [d.__dict__ for d in stored.defects],
    }
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with temporary.open("wb") as handle:
        np.savez(
            handle,
            meta=np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8),
            x=stored.state.x,
            h=stored.state.h,
            regime=stored.state.regime,
            log_volume=stored.state.log_volume,
            factor=stored.state.factor,
            window_days=stored.window.days,
            window_returns=stored.window.returns,
            window_closes=stored.window.closes,
        )
    os.replace(temporary, path)
