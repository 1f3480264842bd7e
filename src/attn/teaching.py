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


# --- moved from the multi-head / self chapters --------------------------------------------------
# Harness code the chapters used to define inline: a table of matrices side by side, the softmax
# saturation measurement, a head of a multi-head layer as a single head, the parameter and FLOP
# formulas, and the measurements of what each head of a trained model attends to.

import contextlib  # noqa: E402
import math  # noqa: E402
from collections.abc import Iterable, Iterator, Sequence  # noqa: E402

__all__ += [
    "answer_positions",
    "heads_removed",
    "kv_sum_answer_positions",
    "matrices",
    "mha_flops",
    "mha_params",
    "single_head",
    "softmax_jacobian_norm",
    "softmax_saturation",
    "weight_on",
]


def matrices(rows: Sequence, *named: tuple[str, torch.Tensor], cols: Sequence | None = None, fmt: str = ".0f"):
    """Show ``("name", matrix)`` pairs side by side as one :class:`attn.viz.Table`.

    One table row per entry of ``rows`` (the matrices' rows), one column per matrix column, headed
    ``"name col"`` with ``col`` taken from ``cols`` (default ``0, 1, ...``). Numbers are written
    with ``fmt``.

    Shape: each matrix ``(R, C)`` with ``R = len(rows)``; the matrices may differ in ``C``."""
    from attn.viz import Table  # views load on first use

    for name, M in named:
        if M.ndim != 2 or M.shape[0] != len(rows):
            raise ValueError(f"matrix {name!r} must be 2-D with {len(rows)} rows (one per entry of rows), "
                             f"got shape {tuple(M.shape)}")
    headers = [""] + [f"{name} {c}" for name, M in named for c in (cols or range(M.shape[1]))]
    body = [[r, *(v for _, M in named for v in M[i].tolist())] for i, r in enumerate(rows)]
    return Table(body, headers, floatfmt=fmt)


def softmax_jacobian_norm(p: torch.Tensor) -> torch.Tensor:
    """Frobenius norm of the softmax Jacobian ``J = diag(p) - p p^T`` for each row of ``p``.

    Shape: ``p`` ``(..., S)`` (rows of softmax weights) -> ``(...)``."""
    J = torch.diag_embed(p) - p.unsqueeze(-1) * p.unsqueeze(-2)  # (..., S, S)
    return J.flatten(-2).norm(dim=-1)


def softmax_saturation(d_k: int, scaled: bool, *, n_queries: int = 512, n_keys: int = 64,
                       seed: int = 0) -> dict[str, float]:
    """Score ``n_queries`` random queries against ``n_keys`` random keys (entries N(0, 1), width
    ``d_k``), divided by ``sqrt(d_k)`` when ``scaled``, and measure the softmax.

    Returns: ``var`` the variance of the scores, ``max_w`` the mean largest weight of a row,
    ``entropy`` the mean row entropy in nats, ``jac`` the mean :func:`softmax_jacobian_norm`."""
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(n_queries, d_k, generator=g)
    k = torch.randn(n_keys, d_k, generator=g)
    s = q @ k.T / (math.sqrt(d_k) if scaled else 1.0)  # (n_queries, n_keys)
    p = torch.softmax(s, dim=-1)
    entropy = -(p * torch.log(p.clamp_min(1e-30))).sum(-1)
    return {"var": s.var().item(), "max_w": p.max(-1).values.mean().item(),
            "entropy": entropy.mean().item(), "jac": softmax_jacobian_norm(p).mean().item()}


def single_head(mha, h: int):
    """Head index ``h`` of an :class:`attn.MultiHeadAttention` as an :class:`attn.SelfAttention`
    built from slices of the same weights: its ``W_q``, ``W_k``, ``W_v`` are head ``h``'s ``E`` rows of
    ``in_proj`` and its ``W_o`` is head ``h``'s ``E`` columns of ``out_proj`` (``W_O^(h)``), with a zero
    output bias (``b_O`` is added once, after the sum over heads). So
    ``sum(single_head(mha, h)(x)[0] for h in range(H)) + b_O`` equals ``mha(x)[0]``."""
    from attn.attention import SelfAttention

    if not 0 <= h < mha.num_heads:
        raise ValueError(f"h must be a head index in 0 .. {mha.num_heads - 1}, got {h}")
    D, E = mha.d_model, mha.d_head
    rows = slice(h * E, (h + 1) * E)  # this head's E dimensions
    W, b = mha.in_proj.weight, mha.in_proj.bias  # (3D, D), (3D,) or None: W_q; W_k; W_v stacked
    head = SelfAttention(D, E, bias=b is not None)
    with torch.no_grad():
        for i, proj in enumerate((head.W_q, head.W_k, head.W_v)):
            proj.weight.copy_(W[i * D : (i + 1) * D][rows])  # (E, D)
            if b is not None:
                proj.bias.copy_(b[i * D : (i + 1) * D][rows])  # (E,)
        head.W_o.weight.copy_(mha.out_proj.weight[:, rows])  # (D, E): W_O^(h)
        if head.W_o.bias is not None:
            head.W_o.bias.zero_()
    return head


def mha_params(D: int) -> int:
    """Parameters of multi-head attention of width ``D`` with biases: ``4 D^2 + 4 D``, whatever the
    number of heads (``W_Q``, ``W_K``, ``W_V``, ``W_O`` and their biases)."""
    return 4 * D * D + 4 * D


def mha_flops(B: int, L: int, S: int, D: int, H: int) -> dict[str, int]:
    """Floating-point operations of the matrix products of multi-head attention (a multiply-add is
    two): ``B`` sequences, ``L`` queries, ``S`` keys and values, width ``D``, ``H`` heads of width
    ``E = D / H``. Per term: ``projections`` (``W_Q`` on the queries, ``W_K`` and ``W_V`` on the
    source), ``scores`` (``Q K^T``), ``weighted sum`` (weights times ``V``) and ``output`` (``W_O``).
    The total is ``4 B D^2 (L + S) + 4 B L S D``: ``H`` cancels out."""
    if D % H:
        raise ValueError(f"H must divide D, got D = {D} and H = {H}")
    E = D // H
    return {"projections": 2 * B * L * D * D + 2 * B * S * D * 2 * D, "scores": 2 * B * H * L * S * E,
            "weighted sum": 2 * B * H * L * S * E, "output": 2 * B * L * D * D}


@contextlib.contextmanager
def heads_removed(mha, removed: Iterable[int]) -> Iterator[None]:
    """Within the ``with`` block, the heads of ``mha`` (an :class:`attn.MultiHeadAttention`) with
    indices in ``removed`` are silenced before ``W_O`` (ablation, through ``mha.head_mask``); the
    previous mask is restored afterwards."""
    removed = set(removed)
    if not removed <= set(range(mha.num_heads)):
        raise ValueError(f"removed must hold head indices in 0 .. {mha.num_heads - 1}, got {sorted(removed)}")
    before = mha.head_mask
    mha.head_mask = torch.tensor([0.0 if h in removed else 1.0 for h in range(mha.num_heads)])
    try:
        yield
    finally:
        mha.head_mask = before


def answer_positions(tokens: torch.Tensor, task) -> torch.Tensor:
    """Where each target of :func:`attn.data.kv_recall` finds its answer: position ``i - 1`` for a
    pair token's target, the pair token with the query's key for a query's. Position 0 has no
    target: ``-1``.

    Shape: ``tokens`` ``(n, T)`` -> ``(n, T)`` long."""
    n, _ = tokens.shape
    K, V = task.num_keys, task.num_values
    pos = torch.full(tokens.shape, -1)
    pos[:, 1:K] = torch.arange(K - 1)  # relation 1: the previous position
    pair_keys = tokens[:, :K] // V  # (n, K): the key of each pair token
    query_keys = tokens[:, K:] - K * V  # (n, Q)
    pos[:, K:] = (pair_keys[:, None, :] == query_keys[:, :, None]).int().argmax(-1)  # relation 2
    return pos


def kv_sum_answer_positions(tokens: torch.Tensor, task) -> tuple[torch.Tensor, torch.Tensor]:
    """The two answer positions of each query of :func:`attn.data.kv_sum`: the digit just before it
    (``i - 1``) and the pair token with its key; ``-1`` at positions without a target.

    Shape: ``tokens`` ``(n, T)`` -> two ``(n, T)`` long tensors, ``(previous, key)``."""
    K, V = task.num_keys, task.num_values
    positions = torch.arange(tokens.shape[1]).expand_as(tokens)
    is_query = (tokens >= K * V) & (tokens < task.vocab_size)  # query tokens (digits come after)
    prev_pos = torch.where(is_query, positions - 1, -1)  # relation 1: the digit just before
    asked = torch.where(is_query, tokens - K * V, -1)  # (n, T): the key each query asks for
    pair_keys = tokens[:, :K] // V  # (n, K)
    key_pos = (pair_keys[:, None, :] == asked[:, :, None]).int().argmax(-1)  # relation 2
    return prev_pos, torch.where(is_query, key_pos, -1)


def weight_on(weights: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
    """Each head's attention weight on one key position per query.

    Shape: ``weights`` ``(n, H, T, S)``, ``positions`` ``(n, T)`` (a key index per query; a negative
    index reads key 0: mask those queries out) -> ``(H, n, T)``."""
    index = positions.clamp_min(0)[:, None, :, None].expand(-1, weights.shape[1], -1, 1)
    return weights.gather(-1, index)[..., 0].transpose(0, 1)
