"""Input checks shared by the package: each error names the argument, what it got and what it needs."""

from __future__ import annotations

import torch

Shape = tuple[int, ...]


def fmt(shape) -> str:
    """``(2, 3, 4)`` for a shape, so messages read the same everywhere."""
    return "(" + ", ".join(str(int(s)) for s in shape) + ")"


def tensor(name: str, x, *, min_dim: int = 1) -> None:
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
    if x.dim() < min_dim:
        raise ValueError(f"{name} must have at least {min_dim} dimensions, got shape {fmt(x.shape)}")


def floating(name: str, x: torch.Tensor) -> None:
    if not x.is_floating_point():
        raise TypeError(f"{name} must be a floating-point tensor, got dtype {x.dtype}")


def last_dim(name: str, x: torch.Tensor, expected: int, what: str) -> None:
    if x.shape[-1] != expected:
        raise ValueError(
            f"{name} has last dimension {x.shape[-1]} (shape {fmt(x.shape)}), expected {expected} ({what})"
        )


def non_empty(name: str, x: torch.Tensor, dim: int, what: str) -> None:
    if x.shape[dim] == 0:
        raise ValueError(f"{name} has an empty {what} dimension (shape {fmt(x.shape)}); attention over nothing is undefined")


def mask(name: str, m, target: Shape) -> None:
    """A mask is bool (True = may attend) or floating (additive) and broadcasts to ``target``."""
    if not isinstance(m, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(m).__name__}")
    if m.dtype != torch.bool and not m.is_floating_point():
        raise TypeError(
            f"{name} must be bool (True = may attend) or floating point (added to the scores), got dtype {m.dtype}"
        )
    try:
        ok = torch.broadcast_shapes(m.shape, target) == torch.Size(target)
    except RuntimeError:
        ok = False
    if not ok:
        raise ValueError(f"{name} of shape {fmt(m.shape)} cannot broadcast to the scores' shape {fmt(target)} (..., L, S)")
