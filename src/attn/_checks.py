"""Input checks shared by the package: each error names the argument, what it got and what it needs."""

from __future__ import annotations

import math

import torch

Shape = tuple[int, ...]


def fmt(shape) -> str:
    """``(2, 3, 4)`` for a shape, so messages read the same everywhere."""
    return "(" + ", ".join(str(int(s)) for s in shape) + ")"


def positive_int(name: str, value, what: str = "") -> int:
    """``value`` as a count: an ``int`` >= 1 (``True`` is not a count). ``what`` says what it counts,
    e.g. ``" (the number of sequences)"``. Returns ``value``."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be a positive integer{what}, got {value!r}")
    return value


def non_negative_int(name: str, value, what: str = "") -> int:
    """``value`` as an index or an offset: an ``int`` >= 0 (not a bool). Returns ``value``."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{name} must be a non-negative integer{what}, got {value!r}")
    return value


def positive_number(name: str, value, what: str = "") -> float:
    """A finite ``int`` or ``float`` > 0 (not a bool). Returns ``value``."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be a positive number{what}, got {value!r}")
    return value


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


def qkv(q, k, v) -> tuple[int, int, tuple[int, ...]]:
    """Queries ``(..., L, E)``, keys ``(..., S, E)`` and values ``(..., S, Ev)`` of one floating dtype,
    non-empty, with batch dimensions that broadcast. Returns ``(L, S, batch)``."""
    for name, x in (("q", q), ("k", k), ("v", v)):
        tensor(name, x, min_dim=2)
        floating(name, x)
    if not (q.dtype == k.dtype == v.dtype):
        raise TypeError(f"q, k and v must share one dtype, got {q.dtype}, {k.dtype} and {v.dtype}")
    E = q.shape[-1]
    last_dim("k", k, E, "q and k must have the same last dimension E")
    if k.shape[-2] != v.shape[-2]:
        raise ValueError(
            f"k and v must have the same source length S: k has shape {fmt(k.shape)}, "
            f"v has shape {fmt(v.shape)}"
        )
    non_empty("q", q, -2, "query length L")
    non_empty("k", k, -2, "source length S")
    non_empty("q", q, -1, "embedding E")
    batch = q.shape[:-2]
    if not (batch == k.shape[:-2] == v.shape[:-2]):  # the common case needs no broadcasting
        try:
            batch = torch.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
        except RuntimeError:
            raise ValueError(
                f"the batch dimensions of q {fmt(q.shape)}, k {fmt(k.shape)} and "
                f"v {fmt(v.shape)} do not broadcast"
            ) from None
    return q.shape[-2], k.shape[-2], tuple(batch)


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
