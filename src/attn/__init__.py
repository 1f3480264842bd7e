"""attn: the attention mechanisms of the Transformer, small, explicit and tested.

Every chapter of the book imports this package; every module in it is checked against PyTorch's own
implementation or against the maths.

Shape legend (used in every docstring, shape comment and chapter):

- ``B``: batch size
- ``H``: number of heads
- ``L``: target (query) sequence length
- ``S``: source (key/value) sequence length
- ``E``: embedding size per head (d_k; Ev when values differ)
- ``D``: model width, D = H * E (d_model)

Mask convention (one meaning everywhere): a boolean mask is ``True`` where attention is *allowed*,
exactly as in :func:`torch.nn.functional.scaled_dot_product_attention`. A floating-point mask is
*added* to the scores (``0`` keeps a pair, ``-inf`` removes it). ``nn.MultiheadAttention``'s
``key_padding_mask`` means the opposite (``True`` = ignore): convert it with
:func:`attn.masks.from_key_padding_mask`. A query row whose keys are all masked gives an output of
zeros, never NaN.

Causal convention (one meaning everywhere): ``is_causal=True`` aligns the triangle bottom-right.
The ``L`` queries are the last ``L`` of the ``S`` key positions, so query ``i`` may attend key ``j``
when ``j <= i + S - L`` (``attn.masks.causal(L, S, offset=S - L)``), as cached decoding needs. For
``L == S`` this is the usual lower triangle and equals PyTorch; for ``L != S`` PyTorch's
``is_causal`` aligns top-left (``j <= i``), which in ``attn`` is the explicit
``mask=attn.masks.causal(L, S)``.

Return convention (one for every attention module: :class:`SelfAttention`,
:class:`MultiHeadAttention`, :class:`attn.efficient.EfficientSelfAttention`,
:class:`attn.efficient.GroupedQueryAttention`): a call returns the pair
``(output, weights)``, where ``weights`` is ``None`` unless the call passes ``need_weights=True``, as
with ``nn.MultiheadAttention(..., need_weights=False)``. Multi-head weights are averaged over heads,
``(B, L, S)``, or per head, ``(B, H, L, S)``, with ``average_weights=False``. A kernel that never
forms the weights (tiled, windowed, linear, Linformer) refuses ``need_weights=True`` by name.
Write ``out, _ = m(x)`` or ``out = m(x)[0]``.
"""

import importlib

from attn import _versions  # noqa: F401, I001  (first: one clear message if torch, numpy, ... is missing or too old)

from attn import blocks, data, efficient, functional, masks, models, notebook, positional, train, variants
from attn.attention import KVCache, MultiHeadAttention, SelfAttention, record_attention
from attn.functional import scaled_dot_product_attention
from attn.positional import (
    ALiBi,
    LearnedPositionalEncoding,
    RotaryPositionalEncoding,
    SinusoidalPositionalEncoding,
    T5RelativePositionBias,
)

__version__ = "0.1.0"

#: The shape letters, one source of truth for the book's legend (a test compares the two).
SHAPE_LEGEND: dict[str, str] = {
    "B": "batch size",
    "H": "number of heads",
    "L": "target (query) sequence length",
    "S": "source (key/value) sequence length",
    "E": "embedding size per head (d_k; Ev when values differ)",
    "D": "model width, D = H * E (d_model)",
}

#: Modules loaded on first use (``attn.viz``, ``from attn import viz``), not by ``import attn``: the
#: views pull in matplotlib (viz, diagram) or anywidget and ipywidgets (widgets), and the debugging
#: tools, exercises and the source
#: document's listing are needed by a few chapters only. A test keeps ``import attn`` under 0.2 s
#: on top of ``import torch``.
_ON_FIRST_USE = ("diagnose", "diagram", "exercises", "measure", "source_listing", "teaching", "viz", "widgets")


def __getattr__(name: str):
    if name in _ON_FIRST_USE:
        return importlib.import_module(f"attn.{name}")  # the import also sets attn.<name>
    raise AttributeError(f"module 'attn' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_ON_FIRST_USE))


__all__ = [
    "ALiBi",
    "KVCache",
    "LearnedPositionalEncoding",
    "MultiHeadAttention",
    "SHAPE_LEGEND",
    "SelfAttention",
    "RotaryPositionalEncoding",
    "SinusoidalPositionalEncoding",
    "T5RelativePositionBias",
    "blocks",
    "data",
    "exercises",
    "diagnose",
    "diagram",
    "efficient",
    "models",
    "notebook",
    "teaching",
    "train",
    "variants",
    "functional",
    "masks",
    "measure",
    "positional",
    "record_attention",
    "scaled_dot_product_attention",
    "source_listing",
    "viz",
    "widgets",
]
