"""Small complete models assembled from :mod:`attn.blocks`, for the chapters' experiments.

- :class:`TokenModel`: embeddings, positions, a stack of self-attention blocks, a linear head.
  ``is_causal=False`` is an encoder (BERT-like, sees both sides); ``is_causal=True`` a decoder-only
  language model (GPT-like) with cached generation.
- :class:`Seq2Seq`: encoder-decoder (the original Transformer, T5/BART-like) with generation,
  self-attention caches and cached cross-attention keys/values.

Both generate with :meth:`attn.generation.GenerationMixin.generate`; each supplies its decoder's
logits and its caches.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from attn import _checks
from attn import positional as pos
from attn.attention import KVCache
from attn.blocks import AttentionOnlyLayer, Decoder, EncoderLayer, Transformer
from attn.generation import GenerationMixin

__all__ = ["Seq2Seq", "TokenModel"]


def _embedding(vocab_size: int, d_model: int) -> nn.Embedding:
    """Embeddings with entries of standard deviation ``d_model ** -0.5``: after the paper's
    multiplication by ``sqrt(d_model)`` they have unit scale, like the positional encodings they are
    added to. (With PyTorch's default N(0, 1) init the multiplication would make them 8x larger
    than the positions at d_model = 64, and position-based heads then learn very slowly.)"""
    emb = nn.Embedding(vocab_size, d_model)
    nn.init.normal_(emb.weight, std=d_model**-0.5)
    return emb


def _input_positional(spec, d_model: int, max_len: int):
    """Split a positional spec into (module added to the input, module used inside attention)."""
    if spec is None or spec == "none":
        return None, None
    if spec == "sinusoidal":
        return pos.SinusoidalPositionalEncoding(d_model, max_len), None
    if isinstance(spec, str):
        registry = getattr(pos, "ENCODINGS", {})
        raise ValueError(f"positional must be 'sinusoidal', 'none', None or an encoding module; got {spec!r}"
                         + (f" (build one of {sorted(registry)} and pass the module)" if registry else ""))
    mode = getattr(spec, "mode", None)
    if mode == "input":
        return spec, None
    if mode in ("scores", "qk"):
        return None, spec
    raise ValueError(f"positional module {type(spec).__name__} has no valid mode ('input', 'scores' or 'qk')")


class TokenModel(GenerationMixin, nn.Module):
    """Token ids ``(B, L)`` -> logits ``(B, L, vocab_size)``.

    Args:
        vocab_size, d_model, num_heads, num_layers, d_ff: sizes (``d_ff`` defaults to ``4 * d_model``;
            ``d_ff=0`` makes every layer an :class:`attn.blocks.AttentionOnlyLayer`, with no feed-forward).
        is_causal: each position sees only itself and the past (decoder-only LM).
        positional: ``"sinusoidal"`` (default), ``None``, or an :mod:`attn.positional` module
            (input encodings are added to the embeddings; score/rotary ones act in every layer).
        norm_first: pre-LN blocks (with a final LayerNorm) or post-LN.
    """

    def __init__(self, vocab_size: int, d_model: int = 64, num_heads: int = 4, num_layers: int = 2,
                 d_ff: int | None = None, *, max_len: int = 512, is_causal: bool = False, dropout: float = 0.0,
                 norm_first: bool = True, positional="sinusoidal"):
        super().__init__()
        self.is_causal, self.max_len, self.d_model = is_causal, max_len, d_model
        self.embed = _embedding(vocab_size, d_model)
        self.pos_input, pos_attn = _input_positional(positional, d_model, max_len)
        self.layers = nn.ModuleList(
            AttentionOnlyLayer(d_model, num_heads, dropout=dropout, norm_first=norm_first, positional=pos_attn)
            if d_ff == 0 else
            EncoderLayer(d_model, num_heads, d_ff or 4 * d_model, dropout=dropout, norm_first=norm_first,
                         positional=pos_attn)
            for _ in range(num_layers)
        )
        self.norm = nn.LayerNorm(d_model) if norm_first else nn.Identity()
        self.head = nn.Linear(d_model, vocab_size)

    def forward(self, tokens: torch.Tensor, *, key_mask: torch.Tensor | None = None, mask=None,
                caches: list[KVCache] | None = None) -> torch.Tensor:
        """``tokens`` ``(B, L)``; ``key_mask`` ``(B, L)`` True = real token; ``mask`` overrides the
        causal mask (e.g. to show what a wrong mask does); ``caches`` one :class:`KVCache` per layer."""
        _checks.token_ids("tokens", tokens, self.vocab_size)
        return self._logits(tokens, key_mask=key_mask, mask=mask, caches=caches)

    def _logits(self, tokens: torch.Tensor, *, key_mask=None, mask=None, caches=None) -> torch.Tensor:
        """:meth:`forward` without the check of ``tokens`` (generation checks its prompt once)."""
        offset = len(caches[0]) if caches else 0
        x = self.embed(tokens) * math.sqrt(self.d_model)  # (B, L, D)
        if self.pos_input is not None:
            x = self.pos_input(x, offset=offset)
        is_causal = self.is_causal and mask is None
        for i, layer in enumerate(self.layers):
            x = layer(x, mask=mask, key_mask=key_mask, is_causal=is_causal, cache=caches[i] if caches else None)
        return self.head(self.norm(x))  # (B, L, V)

    @property
    def vocab_size(self) -> int:
        return self.embed.num_embeddings

    @property
    def max_positions(self) -> int | None:
        """How many positions the model can take, its table's ``max_len``, when positions are added
        to the input; ``None`` otherwise (relative encodings and rotations extend to any length)."""
        return self.max_len if self.pos_input is not None else None

    def new_caches(self, capacity: int | None = None) -> list[KVCache]:
        """One empty :class:`KVCache` per layer; ``capacity``: the rows to allocate at once."""
        return [KVCache(capacity=capacity) for _ in self.layers]

    def _generation_context(self, prompt: torch.Tensor, src_key_mask=None) -> None:  # noqa: ARG002  (the mixin's hook)
        if not self.is_causal:
            raise ValueError("generate() needs a causal model (TokenModel(..., is_causal=True))")
        _checks.token_ids("prompt", prompt, self.vocab_size)

    def _decoder_logits(self, tokens: torch.Tensor, context, caches, past: int) -> torch.Tensor:  # noqa: ARG002
        return self._logits(tokens, caches=caches)  # the caches know how many tokens came before


class Seq2Seq(GenerationMixin, nn.Module):
    """Encoder-decoder: source ids ``(B, S)`` and shifted target ids ``(B, T)`` -> logits ``(B, T, V)``."""

    def __init__(self, src_vocab: int, tgt_vocab: int, d_model: int = 64, num_heads: int = 4,
                 num_encoder_layers: int = 2, num_decoder_layers: int = 2, d_ff: int | None = None, *,
                 max_len: int = 128, dropout: float = 0.0, norm_first: bool = True):
        super().__init__()
        self.d_model = d_model
        self.src_embed = _embedding(src_vocab, d_model)
        self.tgt_embed = _embedding(tgt_vocab, d_model)
        self.pe = pos.SinusoidalPositionalEncoding(d_model, max_len)
        self.transformer = Transformer(d_model, num_heads, num_encoder_layers, num_decoder_layers,
                                       d_ff or 4 * d_model, dropout=dropout, norm_first=norm_first)
        self.head = nn.Linear(d_model, tgt_vocab)

    @property
    def decoder(self) -> Decoder:
        return self.transformer.decoder

    @property
    def vocab_size(self) -> int:
        """How many tokens the decoder predicts (the target vocabulary)."""
        return self.head.out_features

    @property
    def max_positions(self) -> int:
        return self.pe.max_len

    def encode(self, src: torch.Tensor, src_key_mask: torch.Tensor | None = None) -> torch.Tensor:
        """``src`` ``(B, S)`` ids -> memory ``(B, S, D)``."""
        _checks.token_ids("src", src, self.src_embed.num_embeddings)
        x = self.pe(self.src_embed(src) * math.sqrt(self.d_model))  # (B, S, D)
        return self.transformer.encoder(x, key_mask=src_key_mask)  # memory (B, S, D)

    def decode(self, tgt_in: torch.Tensor, memory: torch.Tensor, src_key_mask=None, *, caches=None,
               offset: int = 0) -> torch.Tensor:
        """``tgt_in`` ``(B, T)`` ids after ``offset`` earlier ones (in ``caches``), ``memory``
        ``(B, S, D)`` -> logits ``(B, T, V)``."""
        _checks.token_ids("tgt_in", tgt_in, self.tgt_embed.num_embeddings)
        return self._decode(tgt_in, memory, src_key_mask, caches=caches, offset=offset)

    def _decode(self, tgt_in, memory, src_key_mask=None, *, caches=None, offset: int = 0) -> torch.Tensor:
        """:meth:`decode` without the check of ``tgt_in`` (generation chooses its tokens)."""
        y = self.pe(self.tgt_embed(tgt_in) * math.sqrt(self.d_model), offset=offset)  # (B, T, D)
        h = self.decoder(y, memory, memory_key_mask=src_key_mask, caches=caches)
        return self.head(h)  # (B, T, V)

    def forward(self, src, tgt_in, src_key_mask=None):
        return self.decode(tgt_in, self.encode(src, src_key_mask), src_key_mask)

    is_encoder_decoder = True

    def new_caches(self, capacity: int | None = None, *, cross: bool = True) -> list[tuple[KVCache, KVCache | None]]:
        """One (self-attention, cross-attention) cache pair per decoder layer. The self-attention
        cache allocates ``capacity`` rows at once; the cross-attention one keeps the memory's keys and
        values from the first step on (``static``). ``cross=False`` keeps none: the memory is
        projected again at every step."""
        return [(KVCache(capacity=capacity), KVCache(static=True) if cross else None) for _ in self.decoder.layers]

    def _generation_context(self, src: torch.Tensor, src_key_mask: torch.Tensor | None = None):
        return self.encode(src, src_key_mask), src_key_mask  # the memory, computed once

    def _decoder_logits(self, tokens: torch.Tensor, context, caches, past: int) -> torch.Tensor:
        memory, src_key_mask = context
        return self._decode(tokens, memory, src_key_mask, caches=caches, offset=past)
