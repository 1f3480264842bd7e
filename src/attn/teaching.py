"""The book's worked example: small enough to check with a pencil, shared by the chapters.

Three tokens with 4-dimensional embeddings and projection matrices of small integers, so that
``Q = X W_Q``, ``K = X W_K``, ``V = X W_V`` and the scores ``Q K^T`` are whole numbers, and with
``d_k = 4`` the scale ``1 / sqrt(d_k)`` is a half. The self-attention chapter computes it by hand;
multi-head splits it into two heads of width 2; the causal chapter masks it; cross-attention uses
its three tokens as the memory.
"""

from __future__ import annotations

import torch

__all__ = ["worked_example"]


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
