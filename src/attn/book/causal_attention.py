"""What "Causal attention" measures: language-model windows, loss and accuracy, the causality
check by perturbation, which corner ``is_causal`` aligns, what fully masked rows receive, and
cached decoding with a step mask chosen by the caller (to show what a wrong one does).

Tests: tests/test_causal_chapter.py.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn

from attn import masks
from attn.book.pretraining import windows
from attn.functional import scaled_dot_product_attention

__all__ = ["causal_alignment", "fully_masked_outcomes", "greedy_with_step_mask", "lm_evaluate", "next_token_windows",
           "stepwise_logits", "token_dependency"]


def next_token_windows(ids: torch.Tensor, n: int, length: int, *, seed: int):
    """``n`` random windows of a text, seeded: inputs ``(n, length)`` and the next token of each
    position, targets ``(n, length)`` (the inputs shifted left by one)."""
    chunk = windows(ids, n, length + 1, seed=seed)  # (n, length + 1)
    return chunk[:, :-1], chunk[:, 1:]


@torch.no_grad()
def lm_evaluate(model: nn.Module, x: torch.Tensor, y: torch.Tensor,
                mask: torch.Tensor | None = None) -> tuple[float, float]:
    """``(loss, accuracy)`` of next-token prediction on inputs ``x`` and targets ``y``
    ``(B, T)``: mean cross-entropy in nats and the share of positions whose argmax is right."""
    logits = model(x, mask=mask)  # (B, T, V)
    loss = F.cross_entropy(logits.flatten(0, 1), y.flatten()).item()
    return loss, (logits.argmax(-1) == y).float().mean().item()


@torch.no_grad()
def token_dependency(model: nn.Module, x: torch.Tensor, vocab_size: int,
                     mask: torch.Tensor | None = None) -> torch.Tensor:
    """The causality check by perturbation, for a token model.

    Entry ``(i, t)`` of the result is the largest change of the logits at position ``i`` when
    the token at position ``t`` of ``x`` ``(1, L)`` is replaced by the next id (mod
    ``vocab_size``). A causal model gives exact zeros above the diagonal.

    Shape: ``x`` ``(1, L)`` -> ``(L, L)``, rows are outputs, columns replaced positions.
    """
    base = model(x, mask=mask)  # (1, L, V)
    cols = []
    for t in range(x.shape[1]):
        x2 = x.clone()
        x2[0, t] = (x2[0, t] + 1) % vocab_size  # another token at position t
        cols.append((model(x2, mask=mask) - base).abs().amax(-1)[0])  # (L,)
    return torch.stack(cols, dim=1)  # (L outputs, L replaced positions)


def causal_alignment(fn: Callable[..., torch.Tensor]) -> str:
    """Which causal row ``fn(q, k, v, is_causal=True)`` uses for one query and five keys:
    ``"top-left"`` (the first row of the causal matrix), ``"bottom-right"`` (the last row, what
    cached decoding needs), ``"an error"`` (it refuses the call) or ``"other"``.

    Shape: ``fn`` is called with ``q`` ``(1, 1, 8)`` and ``k``, ``v`` ``(1, 5, 8)``, seeded.
    """
    g = torch.Generator().manual_seed(5)
    q1, k5, v5 = (torch.randn(1, n, 8, generator=g) for n in (1, 5, 5))  # (1, L|S, E)
    try:
        out = fn(q1, k5, v5, is_causal=True)
    except (ValueError, RuntimeError):
        return "an error"
    rows = {"top-left": masks.causal(1, 5), "bottom-right": masks.causal(1, 5, offset=4)}
    for name, m in rows.items():
        if torch.allclose(out, scaled_dot_product_attention(q1, k5, v5, mask=m), atol=1e-6):
            return name
    return "other"


def fully_masked_outcomes(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                          mask: torch.Tensor) -> dict[str, str]:
    """What the query rows with no allowed key receive, for each way of masking the scores
    ``q k^T / sqrt(E)``: ``masked_fill`` with ``-inf``, ``-1e9`` or the dtype's minimum and then
    the softmax, and ``attn.scaled_dot_product_attention`` (its weights and its output).

    Each outcome is ``"NaN"``, ``"zeros"``, ``"uniform over blocked keys"``, ``"error: overflow"``
    (the fill value does not fit the dtype), ``"error"`` or ``"other"``.

    Shape: ``q``, ``k``, ``v`` ``(B, L, E)`` of one dtype, ``mask`` ``(B, L, S)`` bool.
    """
    empty = masks.fully_masked_rows(mask)[..., 0]  # (B, L)
    S = mask.shape[-1]

    def describe(fn) -> str:
        try:
            w = fn()[empty]  # (rows, S)
        except RuntimeError as e:
            return "error: overflow" if "overflow" in str(e) else "error"
        if torch.isnan(w).any():
            return "NaN"
        if (w == 0).all():
            return "zeros"
        if torch.allclose(w.float(), torch.full_like(w.float(), 1 / S), atol=1e-3):
            return "uniform over blocked keys"
        return "other"

    s = q @ k.transpose(-2, -1) / k.shape[-1] ** 0.5  # (B, L, S)
    # the naive softmax, on purpose: what this function reports is how it fails
    naive = lambda fill: lambda: torch.softmax(s.masked_fill(~mask, fill), dim=-1)  # noqa: E731 on purpose
    return {
        "masked_fill(-inf)": describe(naive(float("-inf"))),
        "masked_fill(-1e9)": describe(naive(-1e9)),
        "masked_fill(finfo.min)": describe(naive(torch.finfo(q.dtype).min)),
        "attn weights": describe(lambda: scaled_dot_product_attention(q, k, v, mask=mask, return_weights=True)[1]),
        "attn output": describe(lambda: scaled_dot_product_attention(q, k, v, mask=mask)),
    }


@torch.no_grad()
def greedy_with_step_mask(model, prompt: torch.Tensor, n: int,
                          step_mask: Callable[[int], torch.Tensor]) -> torch.Tensor:
    """Greedy decoding of ``n`` tokens with a KV cache, passing ``mask=step_mask(S)`` at every
    step after the prompt, ``S`` the number of keys once the step's token is appended.

    ``model`` is a token model with ``new_caches()`` and ``model(x, caches=..., mask=...)``
    (:class:`attn.models.TokenModel`). Shape: ``prompt`` ``(B, P)`` -> ``(B, P + n)``.
    """
    caches = model.new_caches()
    logits = model(prompt, caches=caches)  # the prompt, causal
    out = prompt
    for _ in range(n):
        nxt = logits[:, -1].argmax(-1, keepdim=True)  # (B, 1)
        out = torch.cat([out, nxt], dim=1)
        S = len(caches[0]) + 1  # keys after this step's token is appended
        logits = model(nxt, caches=caches, mask=step_mask(S))
    return out


@torch.no_grad()
def stepwise_logits(model, x: torch.Tensor, step_mask: Callable[[int], torch.Tensor]) -> torch.Tensor:
    """Feed ``x`` ``(B, T)`` one token at a time through a KV cache, with ``mask=step_mask(t + 1)``
    at step ``t``, and return every step's logits ``(B, T, V)``: equal to one parallel pass
    ``model(x)`` exactly when the step mask is right."""
    caches = model.new_caches()
    steps = [model(x[:, t : t + 1], caches=caches, mask=step_mask(t + 1)) for t in range(x.shape[1])]
    return torch.cat(steps, dim=1)  # (B, T, V)
