"""The book's worked example, small enough to check with a pencil, and a way to show matrices.

:func:`worked_example`: three tokens with 4-dimensional embeddings and projection matrices of small
integers, so that ``Q = X W_Q``, ``K = X W_K``, ``V = X W_V`` and the scores ``Q K^T`` are whole
numbers, and with ``d_k = 4`` the scale ``1 / sqrt(d_k)`` is a half. The self-attention chapter
computes it by hand; multi-head splits it into two heads of width 2; the causal chapter masks it;
cross-attention uses its three tokens as the memory.

:func:`matrices` shows named matrices side by side as one table, as the chapters print them.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from attn.book.viz import Table

__all__ = ["matrices", "worked_example"]


def worked_example() -> dict:
    """The example: ``tokens`` (3 words), ``X`` ``(3, 4)`` and ``W_Q``, ``W_K``, ``W_V`` ``(4, 4)``,
    float32 tensors (fresh copies on every call, so a chapter may change them)."""
    t = lambda rows: torch.tensor(rows, dtype=torch.float32)  # noqa: E731
    return {
        "tokens": ["the", "cat", "sat"],
        "X": t([[1, 0, 1, 0], [0, 2, 0, 2], [1, 1, 1, 1]]),
        "W_Q": t([[1, 0, 0, 1], [0, 1, 1, 0], [1, 0, 1, 0], [0, 1, 0, 0]]),
        "W_K": t([[0, 1, 1, 0], [1, 0, 0, 1], [0, 0, 1, 1], [1, 1, 0, 0]]),
        "W_V": t([[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 2, 0], [0, 0, 0, 2]]),
    }


def matrices(rows: Sequence, *named: tuple[str, torch.Tensor], cols: Sequence | None = None, fmt: str = ".0f"):
    """Show ``("name", matrix)`` pairs side by side as one :class:`attn.book.viz.Table`.

    One table row per entry of ``rows`` (the matrices' rows), one column per matrix column, headed
    ``"name col"`` with ``col`` taken from ``cols`` (default ``0, 1, ...``). Numbers are written
    with ``fmt``.

    Shape: each matrix ``(R, C)`` with ``R = len(rows)``; the matrices may differ in ``C``."""
    for name, M in named:
        if M.ndim != 2 or M.shape[0] != len(rows):
            raise ValueError(f"matrix {name!r} must be 2-D with {len(rows)} rows (one per entry of rows), "
                             f"got shape {tuple(M.shape)}")
    headers = [""] + [f"{name} {c}" for name, M in named for c in (cols or range(M.shape[1]))]
    body = [[r, *(v for _, M in named for v in M[i].tolist())] for i, r in enumerate(rows)]
    return Table(body, headers, floatfmt=fmt)
