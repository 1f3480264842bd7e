"""Helpers shared by the explorers: shaping data for the synced state, and measuring that state.

Everything an explorer shows lives in its synced traits, so the saved notebook (and the static book)
carries it. That state is JSON: numbers are rounded to 4 decimals to keep it small.
"""

from __future__ import annotations

import json
import pathlib

import numpy as np
import torch

from attn import _checks

HERE = pathlib.Path(__file__).parent
CSS = HERE / "widgets.css"
DECIMALS = 4


def state_size_bytes(widget) -> int:
    """Size in bytes of ``widget``'s synced state written as JSON (front-end source included).

    This is what a notebook saves for the widget and what the static site embeds, so budget tests
    use it.
    """
    state = widget.get_state()
    return len(json.dumps(state, separators=(",", ":"), ensure_ascii=False).encode("utf-8"))


def as_array(name: str, x) -> np.ndarray:
    """A float64 numpy copy of a tensor, an array or nested lists; errors name ``name``."""
    if isinstance(x, torch.Tensor):
        return x.detach().to("cpu", torch.float64).numpy()
    try:
        a = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError) as e:
        raise TypeError(f"{name} must be a torch.Tensor, a numpy array or nested lists of numbers, got {type(x).__name__}") from e
    if a.dtype == object:
        raise TypeError(f"{name} must be a rectangular array of numbers")
    return a


def rounded(a: np.ndarray) -> list:
    """Nested lists rounded to ``DECIMALS`` (``-0.0`` written as ``0.0``), for the synced state."""
    return (np.round(a, DECIMALS) + 0.0).tolist()


def fmt(shape) -> str:
    return _checks.fmt(shape)
