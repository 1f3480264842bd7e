"""Transformer layers built from :class:`attn.MultiHeadAttention`.

Each layer is written to compute exactly what its PyTorch counterpart computes
(``nn.TransformerEncoderLayer``, ``nn.TransformerDecoderLayer``, ``nn.Transformer``), for both
``norm_first`` settings, and ``from_torch`` copies a PyTorch module's weights into ours so the
equality can be checked (tests/test_blocks.py). Shapes are batch-first ``(B, L, D)``; masks use the
package convention (``True`` = may attend).

Post-LN (the original paper):  ``x = LN(x + Sublayer(x))``
Pre-LN (most modern models):   ``x = x + Sublayer(LN(x))``
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn

from attn import _checks
from attn.attention import KVCache, MultiHeadAttention

__all__ = ["ACTIVATIONS", "AttentionOnlyLayer", "Decoder", "DecoderLayer", "Encoder", "EncoderLayer", "FeedForward",
           "Transformer", "activation_function"]

#: The activations a layer accepts by name (the one table of the package). PyTorch's two
#: (``"relu"``, ``"gelu"``, the exact erf GELU) and the names Hugging Face configs use for the tanh
#: approximation of GELU (``"gelu_new"`` in GPT-2, ``"gelu_pytorch_tanh"``).
ACTIVATIONS: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "relu": F.relu,
    "gelu": F.gelu,
    "gelu_new": functools.partial(F.gelu, approximate="tanh"),
    "gelu_pytorch_tanh": functools.partial(F.gelu, approximate="tanh"),
}

Activation = str | Callable[[torch.Tensor], torch.Tensor]


def activation_function(activation: Activation) -> Callable[[torch.Tensor], torch.Tensor]:
    """The function named ``activation`` in :data:`ACTIVATIONS`, or the callable itself (a function
    or an ``nn.Module`` such as ``nn.GELU(approximate="tanh")``).

    Shape: the function acts elementwise, ``(..., d_ff)`` in, the same shape out.

    Raises:
        ValueError: an unknown name.
        TypeError: neither a name nor a callable.
    """
    if isinstance(activation, str):
        if activation not in ACTIVATIONS:
            raise ValueError(f"activation must be one of {sorted(ACTIVATIONS)}, got {activation!r}")
        return ACTIVATIONS[activation]
    if not callable(activation):
        raise TypeError(f"activation must be a name in attn.blocks.ACTIVATIONS or a callable, got "
                        f"{type(activation).__name__}")
    return activation


def _norm(norm: str, d_model: int, eps: float, bias: bool) -> nn.Module:
    """``"layer"``: LayerNorm (with a bias when ``bias``); ``"rms"``: RMSNorm, which rescales
    without re-centring and has no bias (T5)."""
    if norm == "layer":
        return nn.LayerNorm(d_model, eps=eps, bias=bias)
    if norm == "rms":
        return nn.RMSNorm(d_model, eps=eps)
    raise ValueError(f"norm must be 'layer' or 'rms', got {norm!r}")


class FeedForward(nn.Module):
    """Position-wise feed-forward network: ``W_2 · act(W_1 x + b_1) + b_2``, the same MLP at
    every position. ``(B, L, D) -> (B, L, D)`` through a hidden width ``d_ff``.

    ``activation`` is a name in :data:`ACTIVATIONS` (``"relu"``, ``"gelu"``, ...) or any callable
    (a function or an ``nn.Module`` such as ``nn.GELU(approximate="tanh")``), as PyTorch's layers
    accept; ``bias=False`` builds both linear layers without biases (T5).
    """

    def __init__(self, d_model: int, d_ff: int, *, dropout: float = 0.0, activation: Activation = "relu",
                 bias: bool = True):
        super().__init__()
        _checks.positive_int("d_model", d_model)
        _checks.positive_int("d_ff", d_ff)
        self._act = activation_function(activation)  # an nn.Module activation is registered as a submodule
        self.activation = activation if isinstance(activation, str) else None  # the name, when it has one
        self.linear1 = nn.Linear(d_model, d_ff, bias=bias)
        self.linear2 = nn.Linear(d_ff, d_model, bias=bias)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.linear2(self.dropout(self._act(self.linear1(x))))  # (B, L, D)


class EncoderLayer(nn.Module):
    """Self-attention then feed-forward, each with a residual connection and a norm.

    Args:
        d_model, num_heads, d_ff: the sizes ``D``, ``H`` and the feed-forward's hidden width.
        dropout: on the attention weights, inside the feed-forward and on each sublayer's output.
        activation: the feed-forward's, a name in :data:`ACTIVATIONS` or a callable.
        norm_first: pre-LN (``x + Sublayer(LN(x))``) instead of post-LN (``LN(x + Sublayer(x))``).
        norm: ``"layer"`` (LayerNorm) or ``"rms"`` (RMSNorm, no bias, as in T5).
        eps: the norms' epsilon.
        positional: an encoding that acts inside attention (see :class:`attn.MultiHeadAttention`).
        bias: biases in the attention projections, the feed-forward and the LayerNorms.
    """

    def __init__(
        self,
        d_model: int,
        num_heads: int,
        d_ff: int = 2048,
        *,
        dropout: float = 0.1,
        activation: Activation = "relu",
        norm_first: bool = False,
        eps: float = 1e-5,
        positional: nn.Module | None = None,
        bias: bool = True,
        norm: str = "layer",
    ):
        super().__init__()
        self.norm_first = norm_first
        self.self_attn = MultiHeadAttention(d_model, num_heads, dropout=dropout, bias=bias, positional=positional)
        self.ff = FeedForward(d_model, d_ff, dropout=dropout, activation=activation, bias=bias)
        self.norm1 = _norm(norm, d_model, eps, bias)
        self.norm2 = _norm(norm, d_model, eps, bias)
        self.dropout1 = nn.Dropout(dropout)
        self.dropout2 = nn.Dropout(dropout)

    def _sa(self, x, mask, key_mask, is_causal, cache):
        return self.dropout1(self.self_attn(x, mask=mask, key_mask=key_mask, is_causal=is_causal, cache=cache)[0])

    def forward(
        self, x: torch.Tensor, *, mask=None, key_mask=None, is_causal: bool = False, cache: KVCache | None = None
    ) -> torch.Tensor:
        """``x`` ``(B, L, D)``; ``mask`` ``(L, L)``/``(B, L, L)``; ``key_mask`` ``(B, L)`` True = real.

        With ``is_causal`` this is also the block of a decoder-only model (GPT), and ``cache`` lets
        it decode one token at a time."""
        if self.norm_first:
            x = x + self._sa(self.norm1(x), mask, key_mask, is_causal, cache)
            x = x + self.dropout2(self.ff(self.norm2(x)))
        else:
            x = self.norm1(x + self._sa(x, mask, key_mask, is_causal, cache))
            x = self.norm2(x + self.dropout2(self.ff(x)))
        return x

    @classmethod
    def from_torch(cls, layer: nn.TransformerEncoderLayer) -> EncoderLayer:
        """A copy of a batch-first ``nn.TransformerEncoderLayer``, weights included."""
        ours = _like(cls(*_torch_layer_sizes(layer), **_torch_layer_options(layer)), layer)
        _copy_mha(ours.self_attn, layer.self_attn)
        _copy_ff_norms(ours, layer, 2)
        return ours


class AttentionOnlyLayer(EncoderLayer):
    """Self-attention with its residual connection and norm, and no feed-forward sublayer: the layer of
    the attention-only models of the induction-heads chapter (Elhage et al., 2021), where every
    computation between tokens and inside them is done by heads.

    Args:
        d_model, num_heads, dropout, norm_first, eps, positional, bias, norm: as :class:`EncoderLayer`
            (``self.ff`` and ``self.norm2`` are ``None``).

    Shape:
        ``x`` ``(B, L, D)`` in, the same shape out.
    """

    def __init__(self, d_model: int, num_heads: int, *, dropout: float = 0.1, norm_first: bool = False,
                 eps: float = 1e-5, positional: nn.Module | None = None, bias: bool = True, norm: str = "layer"):
        nn.Module.__init__(self)
        self.norm_first = norm_first
        self.self_attn = MultiHeadAttention(d_model, num_heads, dropout=dropout, bias=bias, positional=positional)
        self.ff, self.norm2 = None, None
        self.norm1 = _norm(norm, d_model, eps, bias)
        self.dropout1 = nn.Dropout(dropout)

    def forward(
        self, x: torch.Tensor, *, mask=None, key_mask=None, is_causal: bool = False, cache: KVCache | None = None
    ) -> torch.Tensor:
        """``x + SA(LN(x))`` (pre-LN) or ``LN(x + SA(x))``; the arguments are :meth:`EncoderLayer.forward`'s."""
        if self.norm_first:
            return x + self._sa(self.norm1(x), mask, key_mask, is_causal, cache)
        return self.norm1(x + self._sa(x, mask, key_mask, is_causal, cache))


class DecoderLayer(nn.Module):
    """Masked self-attention, cross-attention over the encoder output (``memory``), feed-forward;
    each with a residual connection and LayerNorm. The constructor's arguments are those of
    :class:`EncoderLayer` (``positional`` acts in the self-attention only)."""

    def __init__(
        self,
        d_model: int,
        num_heads: int,
        d_ff: int = 2048,
        *,
        dropout: float = 0.1,
        activation: Activation = "relu",
        norm_first: bool = False,
        eps: float = 1e-5,
        positional: nn.Module | None = None,
        bias: bool = True,
        norm: str = "layer",
    ):
        super().__init__()
        self.norm_first = norm_first
        self.self_attn = MultiHeadAttention(d_model, num_heads, dropout=dropout, bias=bias, positional=positional)
        self.cross_attn = MultiHeadAttention(d_model, num_heads, dropout=dropout, bias=bias)
        self.ff = FeedForward(d_model, d_ff, dropout=dropout, activation=activation, bias=bias)
        self.norm1 = _norm(norm, d_model, eps, bias)
        self.norm2 = _norm(norm, d_model, eps, bias)
        self.norm3 = _norm(norm, d_model, eps, bias)
        self.dropout1 = nn.Dropout(dropout)
        self.dropout2 = nn.Dropout(dropout)
        self.dropout3 = nn.Dropout(dropout)

    def forward(
        self,
        x: torch.Tensor,
        memory: torch.Tensor,
        *,
        mask=None,
        key_mask=None,
        memory_mask=None,
        memory_key_mask=None,
        is_causal: bool = True,
        cache: KVCache | None = None,
        memory_cache: KVCache | None = None,
    ) -> torch.Tensor:
        """Causal self-attention, cross-attention over ``memory``, feed-forward: ``(B, L, D) -> (B, L, D)``.

        Args:
            x: decoder input ``(B, L, D)``.
            memory: encoder output ``(B, S, D)``.
            mask: for the self-attention, with ``key_mask`` and ``is_causal`` (causal by default).
            memory_mask: ``(L, S)`` or ``(B, L, S)``, with ``memory_key_mask`` ``(B, S)``: for the
                cross-attention.
            cache: :class:`KVCache` for step-by-step decoding; ``memory_cache`` should be
                ``KVCache(static=True)``.
        """
        def sa(h):
            out, _ = self.self_attn(h, mask=mask, key_mask=key_mask, is_causal=is_causal, cache=cache)
            return self.dropout1(out)

        def ca(h):
            out, _ = self.cross_attn(h, memory, mask=memory_mask, key_mask=memory_key_mask, cache=memory_cache)
            return self.dropout2(out)

        if self.norm_first:
            x = x + sa(self.norm1(x))
            x = x + ca(self.norm2(x))
            x = x + self.dropout3(self.ff(self.norm3(x)))
        else:
            x = self.norm1(x + sa(x))
            x = self.norm2(x + ca(x))
            x = self.norm3(x + self.dropout3(self.ff(x)))
        return x

    @classmethod
    def from_torch(cls, layer: nn.TransformerDecoderLayer) -> DecoderLayer:
        """A copy of a batch-first ``nn.TransformerDecoderLayer``, weights included."""
        ours = _like(cls(*_torch_layer_sizes(layer), **_torch_layer_options(layer)), layer)
        _copy_mha(ours.self_attn, layer.self_attn)
        _copy_mha(ours.cross_attn, layer.multihead_attn)
        _copy_ff_norms(ours, layer, 3)
        return ours


def _independent_copies(layer: nn.Module, n: int) -> nn.ModuleList:
    """``n`` copies of ``layer``, each with freshly drawn parameters.

    A plain deep copy (what ``nn.TransformerEncoder`` does) would start every layer from the same
    weights; ``nn.Transformer`` fixes that afterwards with a Xavier re-draw, here each copy simply
    re-runs its modules' own initialisation (see :func:`_reinitialise`)."""
    _checks.positive_int("num_layers", n)
    copies = nn.ModuleList(copy.deepcopy(layer) for _ in range(n))
    for c in copies:
        _reinitialise(c)
    return copies


def _reinitialise(module: nn.Module) -> None:
    """Redraw ``module``'s parameters the way its submodules drew them when built.

    A submodule with its own ``reset_parameters`` (``nn.Linear``, ``nn.LayerNorm``, the
    positional encodings, whose tables start at N(0, 0.02²)) redraws itself, children included;
    any other submodule is searched further down. (Calling ``reset_parameters`` on every module
    would put an ``nn.Embedding`` inside an encoding back to PyTorch's N(0, 1).)
    """
    for child in module.children():
        if hasattr(child, "reset_parameters"):
            child.reset_parameters()
        else:
            _reinitialise(child)


class Encoder(nn.Module):
    """``num_layers`` encoder layers (independently initialised copies of ``layer``) and an
    optional final LayerNorm (needed with pre-LN)."""

    def __init__(self, layer: EncoderLayer, num_layers: int, norm: nn.Module | None = None):
        super().__init__()
        self.layers = _independent_copies(layer, num_layers)
        self.norm = norm

    @classmethod
    def from_torch(cls, encoder: nn.TransformerEncoder) -> Encoder:
        """A copy of a batch-first ``nn.TransformerEncoder``, weights (and final norm) included."""
        return _stack_from_torch(cls, encoder, EncoderLayer)

    def forward(self, x, *, mask=None, key_mask=None, is_causal: bool = False):
        for layer in self.layers:
            x = layer(x, mask=mask, key_mask=key_mask, is_causal=is_causal)
        return x if self.norm is None else self.norm(x)


class Decoder(nn.Module):
    """``num_layers`` decoder layers (independently initialised copies of ``layer``) and an
    optional final LayerNorm."""

    def __init__(self, layer: DecoderLayer, num_layers: int, norm: nn.Module | None = None):
        super().__init__()
        self.layers = _independent_copies(layer, num_layers)
        self.norm = norm

    @classmethod
    def from_torch(cls, decoder: nn.TransformerDecoder) -> Decoder:
        """A copy of a batch-first ``nn.TransformerDecoder``, weights (and final norm) included."""
        return _stack_from_torch(cls, decoder, DecoderLayer)

    def new_caches(self) -> list[tuple[KVCache, KVCache]]:
        """One (self-attention, cross-attention) cache pair per layer, for step-by-step decoding."""
        return [(KVCache(), KVCache(static=True)) for _ in self.layers]

    def forward(self, x, memory, *, mask=None, key_mask=None, memory_mask=None, memory_key_mask=None,
                is_causal: bool = True, caches: list[tuple[KVCache, KVCache]] | None = None):
        for i, layer in enumerate(self.layers):
            cache, memory_cache = caches[i] if caches is not None else (None, None)
            x = layer(x, memory, mask=mask, key_mask=key_mask, memory_mask=memory_mask,
                      memory_key_mask=memory_key_mask, is_causal=is_causal, cache=cache, memory_cache=memory_cache)
        return x if self.norm is None else self.norm(x)


class Transformer(nn.Module):
    """The encoder-decoder of Vaswani et al. (2017), without embeddings and output head, with the
    final LayerNorms that ``nn.Transformer`` puts after both stacks."""

    def __init__(
        self,
        d_model: int = 512,
        num_heads: int = 8,
        num_encoder_layers: int = 6,
        num_decoder_layers: int = 6,
        d_ff: int = 2048,
        *,
        dropout: float = 0.1,
        activation: Activation = "relu",
        norm_first: bool = False,
        eps: float = 1e-5,
        bias: bool = True,
    ):
        super().__init__()
        kw = dict(dropout=dropout, activation=activation, norm_first=norm_first, eps=eps, bias=bias)
        self.encoder = Encoder(EncoderLayer(d_model, num_heads, d_ff, **kw), num_encoder_layers,
                               nn.LayerNorm(d_model, eps=eps, bias=bias))
        self.decoder = Decoder(DecoderLayer(d_model, num_heads, d_ff, **kw), num_decoder_layers,
                               nn.LayerNorm(d_model, eps=eps, bias=bias))
        self.d_model, self.num_heads = d_model, num_heads

    def forward(self, src, tgt, *, src_key_mask=None, tgt_key_mask=None, src_mask=None, tgt_mask=None,
                tgt_is_causal: bool = True):
        """``src`` ``(B, S, D)``, ``tgt`` ``(B, L, D)`` -> ``(B, L, D)``."""
        memory = self.encoder(src, mask=src_mask, key_mask=src_key_mask)
        return self.decoder(tgt, memory, mask=tgt_mask, key_mask=tgt_key_mask, memory_key_mask=src_key_mask,
                            is_causal=tgt_is_causal)

    @classmethod
    def from_torch(cls, model: nn.Transformer) -> Transformer:
        """A copy of a batch-first ``nn.Transformer``, weights included."""
        enc, dec = model.encoder, model.decoder
        d_model, num_heads, d_ff = _torch_layer_sizes(enc.layers[0])
        ours = _like(cls(d_model, num_heads, len(enc.layers), len(dec.layers), d_ff, **_torch_layer_options(enc.layers[0])),
                     enc.layers[0])
        ours.encoder = Encoder.from_torch(enc)
        ours.decoder = Decoder.from_torch(dec)
        return ours


def _like(ours: nn.Module, theirs: nn.Module) -> nn.Module:
    """``ours`` moved to the dtype and device of ``theirs``'s parameters: a copy keeps them, so a
    float64 layer's weights are copied exactly (not rounded to float32)."""
    p = next(theirs.parameters())
    return ours.to(device=p.device, dtype=p.dtype)


def _torch_layer_sizes(layer) -> tuple[int, int, int]:
    """(d_model, num_heads, d_ff) of a PyTorch encoder or decoder layer."""
    return layer.self_attn.embed_dim, layer.self_attn.num_heads, layer.linear1.out_features


def _torch_layer_options(layer) -> dict:
    """The keyword options of our layer that reproduce a PyTorch encoder or decoder layer."""
    return dict(dropout=layer.dropout.p, activation=_torch_activation(layer), norm_first=layer.norm_first,
                eps=layer.norm1.eps, bias=_torch_bias(layer))


def _torch_activation(layer) -> Activation:
    """PyTorch's activation as ours: ``"relu"``/``"gelu"`` for its two named ones, otherwise the
    callable itself (a copy of a module), so that e.g. tanh-approximate GELU stays exactly that."""
    act = layer.activation
    for name, fn in ACTIVATIONS.items():
        if act is fn:
            return name
    return copy.deepcopy(act) if isinstance(act, nn.Module) else act


def _torch_bias(layer) -> bool:
    """Whether a PyTorch layer was built with ``bias=True`` (all its linears and norms agree)."""
    has = [m.bias is not None for m in (layer.linear1, layer.linear2, layer.norm1)]
    has.append(layer.self_attn.in_proj_bias is not None)
    if len(set(has)) != 1:
        raise ValueError(
            "the PyTorch layer mixes parts with and without biases (linear1, linear2, norm1, self_attn: "
            f"{has}); only layers built with one bias= setting can be copied"
        )
    return has[0]


def _stack_from_torch(cls, stack, layer_cls):
    """Our ``Encoder``/``Decoder`` holding copies of a PyTorch stack's layers and final norm."""
    ours = cls.__new__(cls)
    nn.Module.__init__(ours)
    ours.layers = nn.ModuleList(layer_cls.from_torch(layer) for layer in stack.layers)
    ours.norm = None if stack.norm is None else copy.deepcopy(stack.norm)
    return ours


@torch.no_grad()
def _copy_mha(ours: MultiHeadAttention, theirs: nn.MultiheadAttention) -> None:
    if not theirs._qkv_same_embed_dim:
        raise ValueError("only nn.MultiheadAttention with kdim = vdim = embed_dim can be copied")
    ours.in_proj.weight.copy_(theirs.in_proj_weight)
    ours.out_proj.weight.copy_(theirs.out_proj.weight)
    if theirs.in_proj_bias is not None:
        ours.in_proj.bias.copy_(theirs.in_proj_bias)
        ours.out_proj.bias.copy_(theirs.out_proj.bias)


@torch.no_grad()
def _copy_ff_norms(ours, theirs, n_norms: int) -> None:
    ours.ff.linear1.load_state_dict(theirs.linear1.state_dict())
    ours.ff.linear2.load_state_dict(theirs.linear2.state_dict())
    for i in range(1, n_norms + 1):
        getattr(ours, f"norm{i}").load_state_dict(getattr(theirs, f"norm{i}").state_dict())
