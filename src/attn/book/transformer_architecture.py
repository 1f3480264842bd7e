"""What "The Transformer architecture" builds and measures: deep encoder stacks and their gradient
norms at initialisation (pre-LN against post-LN), ``attn``'s blocks beside PyTorch's on one padded
batch, and a trace of every submodule's output shape.

Tests: tests/test_architecture_chapter.py.
"""

from __future__ import annotations

import warnings

import torch
import torch.nn.functional as F
from torch import nn

from attn import _checks, masks
from attn.blocks import DecoderLayer, Encoder, EncoderLayer, Transformer

__all__ = ["deep_encoder", "layer_grad_norms", "max_diff_from_torch", "shape_trace", "torch_pair"]


_TORCH_KINDS = ("EncoderLayer", "DecoderLayer", "Encoder", "Decoder", "Transformer")


def deep_encoder(norm_first: bool, n_layers: int, d_model: int = 64, init: str = "default"):
    """``n_layers`` independently initialised encoder layers (4 heads, ``d_ff = 4 * d_model``,
    no dropout), with the final LayerNorm of pre-LN.

    Args:
        norm_first: pre-LN (True) or post-LN (False).
        n_layers: depth of the stack.
        d_model: width ``D``.
        init: ``"default"`` (PyTorch's ``nn.Linear`` initialisation, what attn's modules get) or
            ``"xavier"`` (Xavier-uniform on every matrix, as ``nn.Transformer`` applies).
    """
    _checks.positive_int("n_layers", n_layers)
    if init not in ("default", "xavier"):
        raise ValueError(f"init must be 'default' or 'xavier', got {init!r}")
    layer = EncoderLayer(d_model, 4, 4 * d_model, dropout=0.0, norm_first=norm_first)
    enc = Encoder(layer, n_layers, nn.LayerNorm(d_model) if norm_first else None)  # fresh copies
    if init == "xavier":
        for p in enc.parameters():
            if p.dim() > 1:
                nn.init.xavier_uniform_(p)
    return enc


def layer_grad_norms(norm_first: bool, init: str, n_layers: int = 24, seed: int = 0, *,
                     n_classes: int = 32, d_model: int = 64) -> tuple[list[float], float]:
    """Gradient norm of each layer's parameters at initialisation, and the FFN branch's size.

    A :func:`deep_encoder` (seeded with ``seed``) with a linear read-out to ``n_classes``
    classes, a cross-entropy loss on random targets for a ``(8, 32, d_model)`` batch of
    unit-variance inputs, one backward pass.

    Returns:
        ``(norms, branch)``: ``norms[l]`` is the norm of the gradient of all parameters of layer
        ``l`` (0 = bottom); ``branch`` is the RMS of each FFN's output over the RMS of its input,
        averaged over the layers.
    """
    torch.manual_seed(seed)
    enc = deep_encoder(norm_first, n_layers, d_model, init)
    head = nn.Linear(d_model, n_classes)
    g = torch.Generator().manual_seed(1000 + seed)
    x = torch.randn(8, 32, d_model, generator=g)  # (B, L, D)
    y = torch.randint(0, n_classes, (8, 32), generator=g)  # (B, L)
    ratios = []  # RMS of the FFN output / RMS of its input, per layer

    def branch_size(_module, inputs, output):
        ratios.append((output.pow(2).mean() / inputs[0].pow(2).mean()).sqrt().item())

    hooks = [layer.ff.register_forward_hook(branch_size) for layer in enc.layers]
    try:
        F.cross_entropy(head(enc(x)).flatten(0, 1), y.flatten()).backward()
    finally:
        for h in hooks:
            h.remove()
    norms = [torch.cat([p.grad.flatten() for p in layer.parameters()]).norm().item()
             for layer in enc.layers]
    return norms, sum(ratios) / len(ratios)


def torch_pair(kind: str, norm_first: bool, *, d_model: int = 32, num_heads: int = 4, d_ff: int = 64):
    """A PyTorch module (seed 0, dropout 0, batch first) and attn's copy of it (``from_torch``).

    ``kind`` is ``"EncoderLayer"``, ``"DecoderLayer"`` or, taken from one ``nn.Transformer``
    with 2 encoder and 3 decoder layers, ``"Encoder"``, ``"Decoder"`` or ``"Transformer"``.
    Returns ``(torch_module, attn_module)``.
    """
    if kind not in _TORCH_KINDS:
        raise ValueError(f"kind must be one of {_TORCH_KINDS}, got {kind!r}")
    torch.manual_seed(0)
    kw = dict(dropout=0.0, batch_first=True, norm_first=norm_first)
    if kind == "EncoderLayer":
        ref = nn.TransformerEncoderLayer(d_model, num_heads, d_ff, **kw)
        return ref, EncoderLayer.from_torch(ref)
    if kind == "DecoderLayer":
        ref = nn.TransformerDecoderLayer(d_model, num_heads, d_ff, **kw)
        return ref, DecoderLayer.from_torch(ref)
    with warnings.catch_warnings():  # with norm_first PyTorch warns it cannot use nested tensors
        warnings.simplefilter("ignore")
        ref = nn.Transformer(d_model, num_heads, num_encoder_layers=2, num_decoder_layers=3,
                             dim_feedforward=d_ff, **kw)
    ours = Transformer.from_torch(ref)
    if kind == "Encoder":
        return ref.encoder, ours.encoder
    if kind == "Decoder":
        return ref.decoder, ours.decoder
    return ref, ours


def max_diff_from_torch(kind: str, norm_first: bool, dtype: torch.dtype = torch.float32, *,
                        pair=None) -> float:
    """Largest ``|attn - PyTorch|`` of a :func:`torch_pair` (or of ``pair``, a
    ``(torch_module, attn_module)`` of that kind and width 32) on one padded batch.

    Both in training mode with dropout 0 (in evaluation mode PyTorch's encoder takes a nested
    tensor fast path that zeroes padded positions). A source of lengths 7, 5, 3 (``S = 7``), a
    target of lengths 5, 5, 2 (``L = 5``) under the causal mask; attn gets its masks
    (True = may attend), PyTorch their negation (True = blocked).
    """
    ref, ours = torch_pair(kind, norm_first) if pair is None else pair
    ref.to(dtype).train()
    ours.to(dtype).train()
    src_keys = masks.padding([7, 5, 3])[:, 0]  # (B, S): True = real source token
    tgt_keys = masks.padding([5, 5, 2])[:, 0]  # (B, L)
    causal = masks.causal(5)  # (L, L)
    g = torch.Generator().manual_seed(1)
    src = torch.randn(3, 7, 32, generator=g, dtype=dtype)  # (B, S, D)
    tgt = torch.randn(3, 5, 32, generator=g, dtype=dtype)  # (B, L, D)
    with torch.no_grad():
        if kind in ("EncoderLayer", "Encoder"):
            a, b = ours(src, key_mask=src_keys), ref(src, src_key_padding_mask=~src_keys)
        elif kind in ("DecoderLayer", "Decoder"):  # attn's decoder self-attention is causal
            a = ours(tgt, src, key_mask=tgt_keys, memory_key_mask=src_keys)
            b = ref(tgt, src, tgt_mask=~causal, tgt_key_padding_mask=~tgt_keys,
                    memory_key_padding_mask=~src_keys)
        else:
            a = ours(src, tgt, src_key_mask=src_keys, tgt_key_mask=tgt_keys)
            b = ref(src, tgt, tgt_mask=~causal, src_key_padding_mask=~src_keys,
                    tgt_key_padding_mask=~tgt_keys, memory_key_padding_mask=~src_keys)
    return (a - b).abs().max().item()


def shape_trace(model, *inputs) -> dict[str, tuple[int, ...]]:
    """The output shape of every submodule of ``model`` during one call ``model(*inputs)``.

    Forward hooks record, in execution order, the first output shape of each named submodule
    (the output tensor; the first element when a module returns a tuple, as attention returns
    ``(out, weights)``). Dropout and module lists are left out. Runs without gradients.
    """
    trace: dict[str, tuple[int, ...]] = {}

    def record(name):
        def hook(_module, _inputs, output):
            out = output[0] if isinstance(output, tuple) else output
            trace.setdefault(name, tuple(out.shape))
        return hook

    handles = [m.register_forward_hook(record(n)) for n, m in model.named_modules()
               if n and not isinstance(m, (nn.Dropout, nn.ModuleList))]
    try:
        with torch.no_grad():
            model(*inputs)
    finally:
        for h in handles:
            h.remove()
    return trace
