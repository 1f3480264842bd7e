"""A zoo of broken attention layers, for the debugging chapter and the tests ONLY. Never use them.

:class:`Reference` is a small, correct multi-head self-attention layer (with sinusoidal positions
added to its input, like the first layer of a model), written out step by step:
positions -> project -> split heads -> scores -> mask -> softmax -> weighted sum -> merge heads.
Each bug is a subclass that overrides the one step it gets wrong, so the difference from the
correct layer is a few lines a reader can compare. Every layer follows the contract of
:mod:`attn.diagnose`: ``layer(x, key_mask)`` with ``x`` ``(B, L, D)`` and ``key_mask`` ``(B, S)``
(``True`` = real token) returns ``(B, L, D)``; pass ``memory`` ``(B, S, D)`` for cross-attention.
"""

from __future__ import annotations

import functools
import math

import torch
from torch import nn

from attn import _checks, masks
from attn.positional import sinusoidal_table

__all__ = [
    "BUGS",
    "CAUSAL_BUGS",
    "DecoderLayer",
    "ForgotPositions",
    "HeadsWithoutTranspose",
    "InvertedMask",
    "KeysFromDecoder",
    "MaskAfterSoftmax",
    "MinusBigInHalf",
    "NoScale",
    "OffByOneCausal",
    "Reference",
    "StaleTrainingMask",
    "TruncatedHeads",
    "init_probe",
    "seeded",
    "without_positions",
    "zoo",
]


class Reference(nn.Module):
    """Correct multi-head attention: ``softmax(Q Kᵀ / sqrt(d_k) + mask) V``, heads merged by ``out``.

    Args:
        d_model: model width ``D``.
        num_heads: ``H``, dividing ``D``.
        is_causal: block keys after each query.
        max_len: longest sequence (the causal mask and the position table are built once, for
            this training length).

    The mask steps use :mod:`attn.masks` (:func:`~attn.masks.combine`,
    :func:`~attn.masks.masked_softmax`); a bug overrides the step it gets wrong with its own code.
    """

    def __init__(self, d_model: int, num_heads: int, *, is_causal: bool = False, max_len: int = 64):
        super().__init__()
        self.check_sizes(d_model, num_heads)
        self.d_model, self.num_heads, self.is_causal, self.max_len = d_model, num_heads, is_causal, max_len
        self.d_head = d_model // num_heads
        inner = num_heads * self.d_head
        self.qkv = nn.Linear(d_model, 3 * inner)
        self.out = nn.Linear(inner, d_model)
        self.register_buffer("causal_mask", masks.causal(max_len), persistent=False)  # (T, T)
        self.register_buffer("pos_table", sinusoidal_table(max_len, d_model), persistent=False)  # (T, D)

    def check_sizes(self, d_model: int, num_heads: int) -> None:
        # The rule of attn._checks.heads, with the short message the debugging chapter shows.
        _checks.divisible("d_model", d_model, num_heads, by_name="num_heads")

    def add_positions(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.pos_table[: x.shape[1]].to(x.dtype)  # (B, L, D)

    def project(self, x: torch.Tensor, memory: torch.Tensor | None):
        inner = self.num_heads * self.d_head
        W, b = self.qkv.weight, self.qkv.bias
        source = x if memory is None else memory  # keys and values come from the memory in cross-attention
        q = nn.functional.linear(x, W[:inner], b[:inner])  # (B, L, inner)
        k, v = nn.functional.linear(source, W[inner:], b[inner:]).chunk(2, -1)  # 2 x (B, S, inner)
        return q, k, v

    def split_heads(self, t: torch.Tensor) -> torch.Tensor:
        B, N, _ = t.shape
        return t.view(B, N, self.num_heads, self.d_head).transpose(1, 2)  # (B, H, N, E)

    def merge_heads(self, z: torch.Tensor) -> torch.Tensor:
        B, H, L, E = z.shape
        return z.transpose(1, 2).reshape(B, L, H * E)  # (B, L, inner)

    def scores(self, q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
        return q @ k.transpose(-2, -1) / math.sqrt(self.d_head)  # (B, H, L, S)

    def causal_part(self, L: int, S: int) -> torch.Tensor:
        return self.causal_mask[:L, :S]  # (L, S)

    def allowed(self, key_mask: torch.Tensor | None, L: int, S: int) -> torch.Tensor | None:
        """Bool ``(B, 1, L, S)`` (or broadcastable), True where query i may attend key j."""
        causal = self.causal_part(L, S) if self.is_causal else None  # (L, S)
        km = None if key_mask is None else key_mask[:, None, None, :]  # (B, 1, 1, S)
        return masks.combine(causal, km)

    def softmax(self, scores: torch.Tensor, allowed: torch.Tensor | None) -> torch.Tensor:
        return masks.masked_softmax(scores, allowed)  # (B, H, L, S); a row with no key gives zeros

    def forward(self, x: torch.Tensor, key_mask: torch.Tensor | None = None,
                memory: torch.Tensor | None = None) -> torch.Tensor:
        """``x`` ``(B, L, D)``; ``key_mask`` ``(B, S)``, True = real token; ``memory`` ``(B, S, D)``
        for cross-attention (keys and values), else ``None``. Returns ``(B, L, D)``."""
        x = self.add_positions(x)  # (B, L, D)
        q, k, v = (self.split_heads(t) for t in self.project(x, memory))  # (B, H, L|S, E)
        L, S = q.shape[-2], k.shape[-2]
        weights = self.softmax(self.scores(q, k), self.allowed(key_mask, L, S))  # (B, H, L, S)
        self.last_weights = weights.detach()
        return self.out(self.merge_heads(weights @ v))  # (B, L, D)


class NoScale(Reference):
    """Forgets the ``1/sqrt(d_k)``: scores grow like ``sqrt(d_k)`` and the softmax gets sharper."""

    def scores(self, q, k):
        return q @ k.transpose(-2, -1)  # (B, H, L, S), not divided by sqrt(d_k)


class ForgotPositions(Reference):
    """Adds no positional encoding: the layer cannot tell the order of its tokens."""

    def add_positions(self, x):
        return x


class MaskAfterSoftmax(Reference):
    """Zeroes masked weights after the softmax: the rows no longer sum to one, and the masked keys
    still shaped the normalisation."""

    def softmax(self, scores, allowed):
        weights = torch.softmax(scores, -1)
        return weights if allowed is None else weights * allowed  # (B, H, L, S)


class InvertedMask(Reference):
    """Uses the padding mask with the other convention (``True`` = ignore, as
    ``nn.MultiheadAttention``'s ``key_padding_mask``): real tokens attend only to padding."""

    def allowed(self, key_mask, L, S):
        return super().allowed(None if key_mask is None else ~key_mask, L, S)


class OffByOneCausal(Reference):
    """A causal mask shifted by one (``j <= i + 1``): each position sees the next token."""

    def causal_part(self, L, S):
        return masks.causal(L, S, offset=1, device=self.causal_mask.device)


class StaleTrainingMask(Reference):
    """Slices the causal mask built for the training length as if every sequence filled it: the last
    ``L`` rows of the ``(T, T)`` mask. Right at length ``T``, wrong (future-leaking) below it."""

    def causal_part(self, L, S):
        T = self.max_len
        return self.causal_mask[T - L:, :S]  # rows of queries at T-L..T-1: they see T-L keys too far


class KeysFromDecoder(Reference):
    """Cross-attention that takes keys and values from the decoder instead of the encoder memory:
    it becomes an unmasked self-attention over the target, which sees the future and ignores the source."""

    def project(self, x, memory):  # noqa: ARG002 (ignoring memory is the bug)
        return super().project(x, None)


class HeadsWithoutTranspose(Reference):
    """Splits heads with ``view(B, H, L, E)`` instead of ``view(B, L, H, E).transpose(1, 2)``: each
    "head" gets slices of several tokens, so positions mix (and the causal mask means nothing)."""

    def split_heads(self, t):
        B, N, _ = t.shape
        return t.reshape(B, self.num_heads, N, self.d_head)  # (B, H, N, E), but the wrong numbers

    def merge_heads(self, z):
        B, H, L, E = z.shape
        return z.reshape(B, L, H * E)


class MinusBigInHalf(Reference):
    """Masks by adding ``-1e9``: fine in float32, but ``-1e9`` is ``-inf`` in float16, so a fully
    masked row becomes ``softmax([-inf, ...]) = NaN`` there (``masked_fill(..., -1e9)`` raises instead)."""

    def softmax(self, scores, allowed):
        if allowed is not None:
            scores = scores + (~allowed).to(scores.dtype) * -1e9  # -1e9 rounds to -inf in float16
        return torch.softmax(scores, -1)


class TruncatedHeads(Reference):
    """Accepts ``d_model`` not divisible by ``num_heads`` and rounds the head width down: the layer
    silently works in ``num_heads * (d_model // num_heads)`` dimensions."""

    def check_sizes(self, d_model, num_heads):
        pass  # the missing check


class DecoderLayer(nn.Module):
    """A decoder layer over a fixed, already encoded source: causal self-attention, then
    cross-attention to ``memory`` (``(1, S, D)``, shared by the batch), each with a residual.
    ``cross`` picks the cross-attention class (:class:`KeysFromDecoder` for the bug)."""

    def __init__(self, d_model: int, num_heads: int, memory: torch.Tensor, *, cross: type[Reference] = Reference):
        super().__init__()
        self.self_attn = Reference(d_model, num_heads, is_causal=True)
        self.cross_attn = cross(d_model, num_heads)
        self.register_buffer("memory", memory, persistent=False)  # (1, S, D)

    def forward(self, x: torch.Tensor, key_mask: torch.Tensor | None = None) -> torch.Tensor:
        h = x + self.self_attn(x, key_mask)  # (B, L, D)
        memory = self.memory.to(x.dtype).expand(x.shape[0], -1, -1)  # (B, S, D)
        return h + self.cross_attn(h, memory=memory)  # (B, L, D)


#: bug name -> (class, what it gets wrong), in the chapter's order.
BUGS: dict[str, tuple[type[Reference], str]] = {
    "missing 1/sqrt(d_k)": (NoScale, "scores not divided by sqrt(d_k)"),
    "missing positional encoding": (ForgotPositions, "no positions added"),
    "mask after softmax": (MaskAfterSoftmax, "masked weights zeroed after the softmax"),
    "inverted mask convention": (InvertedMask, "True read as 'ignore'"),
    "off-by-one causal mask": (OffByOneCausal, "j <= i + 1"),
    "training-length mask at inference": (StaleTrainingMask, "last L rows of the (T, T) mask"),
    "cross-attention keys from the decoder": (KeysFromDecoder, "k, v projected from the target"),
    "head split without transpose": (HeadsWithoutTranspose, "view(B, H, L, E)"),
    "-1e9 in float16": (MinusBigInHalf, "additive -1e9 mask"),
    "d_model not divisible by heads": (TruncatedHeads, "head width rounded down"),
}


def seeded(cls: type[Reference], *, d_model: int = 32, num_heads: int = 4, is_causal: bool = False,
           seed: int = 0, **kwargs) -> Reference:
    """``cls(d_model, num_heads, is_causal=..., **kwargs)`` built right after ``torch.manual_seed(seed)``.

    Every layer of the chapter is built this way, so that the bug is its only difference from
    :class:`Reference` (the same seed gives the same weights). The global generator is seeded, as
    the chapter's cells expect: what they draw next follows from ``seed``.
    """
    torch.manual_seed(seed)
    return cls(d_model, num_heads, is_causal=is_causal, **kwargs)


@functools.cache
def without_positions(cls: type[Reference]) -> type[Reference]:
    """``cls`` with :class:`ForgotPositions`'s omission too (``ForgotPositions`` itself for
    :class:`Reference`): its scores depend on ``q · k`` alone, whatever the token order."""
    if issubclass(ForgotPositions, cls):
        return ForgotPositions
    return type(f"{cls.__name__}NoPositions", (cls, ForgotPositions), {})


def _mean_entropy(w: torch.Tensor) -> float:
    """Normalised entropy of each row of weights ``(..., S)``, averaged: 1 = uniform, 0 = one-hot."""
    return float((-torch.special.xlogy(w, w).sum(-1) / math.log(w.shape[-1])).mean())


def init_probe(cls: type[Reference], d_k: int, seed: int) -> tuple[float, float]:
    """The attention of ``cls`` at initialisation, without positions: ``(entropy, largest weight)``.

    A seeded layer with 4 heads of width ``d_k`` (``D = 4 d_k``, positions left out so that the
    scores depend on ``q · k`` alone) reads a seeded input ``(4, 16, D)``. Returns the mean
    normalised entropy of its weight rows (1 = uniform, 0 = one key takes all) and the mean of
    each row's largest weight.
    """
    x = torch.randn(4, 16, 4 * d_k, generator=torch.Generator().manual_seed(d_k + 1000 * seed))
    m = seeded(without_positions(cls), d_model=4 * d_k, seed=seed)
    with torch.no_grad():
        m(x)
    return _mean_entropy(m.last_weights), float(m.last_weights.amax(-1).mean())


#: The bugs that show in a causal layer, which :func:`zoo` builds with ``is_causal=True``.
CAUSAL_BUGS = frozenset({MaskAfterSoftmax, OffByOneCausal, StaleTrainingMask, KeysFromDecoder})


def zoo(memory: torch.Tensor, *, d_model: int = 32, num_heads: int = 4):
    """Every bug of :data:`BUGS`, built as the chapter's summary table checks it.

    Yields ``(name, what, module, d_model, is_causal)`` per bug, in the chapter's order: causal
    bugs in a causal layer, :class:`KeysFromDecoder` inside a :class:`DecoderLayer` over
    ``memory`` ``(1, S, D)``, :class:`TruncatedHeads` at width 30 (not divisible by 4 heads).
    Each module is built after ``torch.manual_seed(0)``, when the previous one has been used.
    """
    for name, (cls, what) in BUGS.items():
        causal = cls in CAUSAL_BUGS
        torch.manual_seed(0)
        if cls is KeysFromDecoder:
            module, width = DecoderLayer(d_model, num_heads, memory, cross=cls), d_model
        else:
            width = 30 if cls is TruncatedHeads else d_model
            module = seeded(cls, d_model=width, num_heads=num_heads, is_causal=causal)
        yield name, what, module, width, causal
