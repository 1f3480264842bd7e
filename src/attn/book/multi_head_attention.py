"""What "Multi-head attention" computes and measures: one head of a multi-head layer on its own, the
parameter and FLOP formulas, head ablation, and what each head of a model trained on the recall
tasks of :mod:`attn.book.data` attends to (where the answers are, how much weight lands there,
accuracy per relation), with the head-count sweep's training run.

Tests: tests/test_multi_head_chapter.py.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator, Sequence

import torch

from attn import SelfAttention, _checks, models
from attn.book import data, train

__all__ = ["answer_positions", "head_sweep_run", "heads_removed", "kv_accuracy", "kv_model", "kv_sum_answer_positions",
           "mha_flops", "mha_params", "single_head", "weight_on"]


def single_head(mha, h: int):
    """Head index ``h`` of an :class:`attn.MultiHeadAttention` as an :class:`attn.SelfAttention`
    built from slices of the same weights: its ``W_q``, ``W_k``, ``W_v`` are head ``h``'s ``E`` rows of
    ``in_proj`` and its ``W_o`` is head ``h``'s ``E`` columns of ``out_proj`` (``W_O^(h)``), with a zero
    output bias (``b_O`` is added once, after the sum over heads). So
    ``sum(single_head(mha, h)(x)[0] for h in range(H)) + b_O`` equals ``mha(x)[0]``."""
    _checks.integer("h", h, 0, mha.num_heads, bounds="[)", high_name="num_heads", what=" (a head index)")
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
    E = _checks.heads(D, H, names=("D", "H"))
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
    """Where each target of :func:`attn.book.data.kv_recall` finds its answer: position ``i - 1`` for a
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
    """The two answer positions of each query of :func:`attn.book.data.kv_sum`: the digit just before it
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


@torch.no_grad()
def kv_accuracy(model, test: tuple[torch.Tensor, torch.Tensor, torch.Tensor],
                relations: Sequence[int] = (1, 2)) -> dict[int, float]:
    """Accuracy of a token model on a test set ``(tokens, targets, kind)`` of
    :func:`attn.book.data.kv_recall`, per relation (the values of ``kind``: 1 previous token, 2 matching
    key)."""
    tokens, targets, kind = test
    correct = model(tokens).argmax(-1) == targets  # (n, T)
    return {r: correct[kind == r].float().mean().item() for r in relations}


def kv_model(task, d_model: int, num_heads: int, seed: int = 0):
    """The multi-head chapter's model for ``task`` (an :class:`attn.book.data.KVRecall`): an
    :class:`attn.models.TokenModel` with one encoder layer, initialised from ``seed``."""
    torch.manual_seed(seed)
    return models.TokenModel(task.vocab_size, d_model=d_model, num_heads=num_heads, num_layers=1,
                             max_len=task.seq_len)


def head_sweep_run(num_heads: int, seed: int, *, d_model: int = 64, steps: int = 250, batch: int = 128) -> dict:
    """One run of the multi-head chapter's head-count sweep: the chapter's two-head recipe (the
    same training batches, loss, optimiser and test set) with ``num_heads`` heads of width
    ``d_model / num_heads``, from ``seed``. ``scripts/head_sweep.py`` runs it for every setting.

    Returns:
        ``{"H", "seed", "acc": {relation: accuracy}, "loss": test loss, "curve": training losses}``.
    """
    task = data.KVRecall()
    test = data.kv_recall(1000, task, seed=0)  # the chapter's held-out test set
    batches = [data.kv_recall(batch, task, seed=10_000 + i) for i in range(steps)]
    model = kv_model(task, d_model, num_heads, seed)
    curve = train.train(model, batches.__getitem__, train.token_loss, steps=steps, lr=3e-3, warmup=50,
                        seed=seed, progress=False)
    with torch.no_grad():
        loss = train.token_loss(model, test).item()
    return {"H": num_heads, "seed": seed, "acc": kv_accuracy(model, test), "loss": loss, "curve": curve}
