"""A trained model as JSON for the explorers' front end: what ``_nn.js`` runs in the page.

:func:`model_state` writes a :class:`attn.models.TokenModel` or an :class:`attn.variants.GPT` as
``{"format": "attn-model/1", "config": {...}, "vocab": [...], "tensors": {name: {dtype, shape, data}}}``,
each tensor little-endian float16 (the precision the book's checkpoints are stored in) or float32, in
base64. ``_nn.js``'s ``loadModel`` reads it back and its ``forward`` computes what the PyTorch model
computes (tests/test_nn_js.py). :func:`checkpoint_state` does it for a trained checkpoint of
:mod:`attn.book.pretraining`; ``python -m scripts.export_weights`` writes them to files and measures them.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from attn.book.widgets._state import b64

__all__ = ["FORMAT", "checkpoint_state", "model_state"]

FORMAT = "attn-model/1"
_DTYPES = {"float16": "<f2", "float32": "<f4"}


def _encode_tensor(t: torch.Tensor, dtype: str) -> dict:
    a = t.detach().to("cpu", torch.float64).numpy().astype(_DTYPES[dtype])
    return {"dtype": dtype, "shape": [int(n) for n in a.shape], "data": b64(a)}


def _positional(model) -> tuple[str, float | None, nn.Module | None]:
    """(name, base, input-table module) of a TokenModel's or GPT's positions."""
    from attn import positional as pos

    table = getattr(model, "pos_input", None) if hasattr(model, "pos_input") else getattr(model, "pos", None)
    inside = model.layers[0].self_attn.positional
    if table is not None and inside is not None:
        raise ValueError("model has positions both in its input and inside attention; the front end supports one")
    if isinstance(table, pos.SinusoidalPositionalEncoding):
        return "sinusoidal", float(table.base), None
    if isinstance(table, pos.LearnedPositionalEncoding):
        return "learned", None, table
    if isinstance(inside, pos.RotaryPositionalEncoding):
        return "rope", float(inside.base), None
    if isinstance(inside, pos.ALiBi):
        return "alibi", None, None
    if table is None and inside is None:
        return "none", None, None
    raise ValueError(f"model's positional encoding {type(table or inside).__name__} is not supported by the front end "
                     "(supported: sinusoidal, learned, RoPE, ALiBi, none)")


def model_state(model: nn.Module, *, dtype: str = "float16", vocab=None) -> dict:
    """``model`` (a :class:`attn.models.TokenModel` or :class:`attn.variants.GPT`) as the front end's JSON.

    Args:
        model: the model; its layers must be :class:`attn.blocks.EncoderLayer` with LayerNorm and a
            named activation (``"relu"``, ``"gelu"``, ``"gelu_new"``, ``"gelu_pytorch_tanh"``).
        dtype: ``"float16"`` (compact; exact for the book's float16 checkpoints) or ``"float32"``.
        vocab: optional list of the tokens' strings (``CharVocab.itos``), for a front end that encodes text.

    Returns:
        A JSON-ready dict (see the module); the front end's numbers equal the model run with its
        weights rounded to ``dtype``.

    Raises:
        ValueError: a model, layer, activation or positional encoding the front end does not support,
            or an unknown ``dtype``.
    """
    from attn.models import TokenModel
    from attn.variants import GPT

    if dtype not in _DTYPES:
        raise ValueError(f"dtype must be one of {sorted(_DTYPES)}, got {dtype!r}")
    if not isinstance(model, (TokenModel, GPT)):
        raise ValueError(f"model must be an attn.TokenModel or attn.variants.GPT, got {type(model).__name__}")
    layer = model.layers[0]
    if not isinstance(layer.norm1, nn.LayerNorm):
        raise ValueError(f"the front end supports LayerNorm blocks, got {type(layer.norm1).__name__}")
    if layer.ff is not None and layer.ff.activation is None:
        raise ValueError("the front end needs a named activation (attn.blocks.ACTIVATIONS), got a callable")
    positional, base, table = _positional(model)
    D = layer.self_attn.d_model
    is_gpt = isinstance(model, GPT)
    tied = model.head.weight is model.embed.weight
    config = dict(
        vocab_size=model.embed.num_embeddings, d_model=D, num_heads=layer.self_attn.num_heads,
        num_layers=len(model.layers), d_ff=0 if layer.ff is None else layer.ff.linear1.out_features, max_len=model.max_len,
        is_causal=True if is_gpt else bool(model.is_causal), norm_first=bool(layer.norm_first),
        eps=float(layer.norm1.eps), activation=None if layer.ff is None else layer.ff.activation,
        embed_scale=1.0 if is_gpt else math.sqrt(D), positional=positional, positional_base=base,
        final_norm=isinstance(model.norm, nn.LayerNorm), tied_head=tied,
    )
    if table is not None:
        config["max_len"] = min(config["max_len"], table.max_len)
    tensors = {"embed": _encode_tensor(model.embed.weight, dtype)}
    if table is not None:
        tensors["pos"] = _encode_tensor(table.embedding.weight, dtype)
    for name, t in model.layers.state_dict().items():
        tensors[f"layers.{name}"] = _encode_tensor(t, dtype)
    if config["final_norm"]:
        tensors.update({f"norm.{k}": _encode_tensor(v, dtype) for k, v in model.norm.state_dict().items()})
    if not tied:
        tensors["head.weight"] = _encode_tensor(model.head.weight, dtype)
    if model.head.bias is not None:
        tensors["head.bias"] = _encode_tensor(model.head.bias, dtype)
    state = {"format": FORMAT, "config": config, "tensors": tensors}
    if vocab is not None:
        state["vocab"] = [str(v) for v in vocab]
    return state


def checkpoint_state(name: str = "gpt", *, dtype: str = "float16") -> dict:
    """The trained checkpoint ``name`` of :mod:`attn.book.pretraining` (``"gpt"``) as :func:`model_state`'s JSON,
    with its character vocabulary. The checkpoints are stored in float16, so ``"float16"`` loses nothing."""
    from attn.book import pretraining

    if name != "gpt":
        raise ValueError(f"name must be 'gpt' (the decoder-only checkpoint the front end runs), got {name!r}")
    model, _ = pretraining.load(name)
    vocab = pretraining.text_corpus()[0]
    return model_state(model, dtype=dtype, vocab=vocab.itos)
