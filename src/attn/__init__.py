"""attn: the attention mechanisms of the Transformer, small, explicit and tested.

Every module is checked against PyTorch's or Hugging Face's own implementation or against the maths.
The package has two parts, and the first never imports the second:

- **the library**, ``attn`` itself, in layers that each import only the ones below: the maths
  (:mod:`attn.functional`, :mod:`attn.masks`); modules (:mod:`attn.attention`,
  :mod:`attn.positional`); models (:mod:`attn.blocks`, :mod:`attn.models`, :mod:`attn.variants`,
  :mod:`attn.efficient`); and around them :mod:`attn.generation` (one ``generate`` for every
  decoder), :mod:`attn.measure` (time, memory, FLOPs, operators) and :mod:`attn.diagnose` (checks
  to run on any attention module);
- **the book's material**, :mod:`attn.book`: what the chapters of the attn-book use to teach
  (the worked example, each chapter's helpers, data, the training loop, stored results, plots,
  diagrams, exercises, the bug zoo, the widgets). ``import attn`` loads none of it.

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

from attn import _moved, blocks, efficient, functional, generation, masks, models, positional, variants
from attn.attention import KVCache, MultiHeadAttention, SelfAttention, record_attention
from attn.functional import scaled_dot_product_attention
from attn.positional import (
    ALiBi,
    LearnedPositionalEncoding,
    RotaryPositionalEncoding,
    SinusoidalPositionalEncoding,
    T5RelativePositionBias,
)

__version__ = "0.2.0"

#: The shape letters, one source of truth for the book's legend (a test compares the two).
SHAPE_LEGEND: dict[str, str] = {
    "B": "batch size",
    "H": "number of heads",
    "L": "target (query) sequence length",
    "S": "source (key/value) sequence length",
    "E": "embedding size per head (d_k; Ev when values differ)",
    "D": "model width, D = H * E (d_model)",
}

#: Modules loaded on first use (``attn.diagnose``, ``from attn import measure``), not by ``import attn``:
#: the debugging checks and the measuring tools are needed by few programs. :mod:`attn.book`, the book's
#: material, is not part of the library at all: it is imported by whoever uses it (``from attn import
#: book``), never by ``attn``. A test keeps ``import attn`` under 0.2 s on top of ``import torch`` and
#: free of ``attn.book`` (tests/test_layers.py).
_ON_FIRST_USE = ("diagnose", "measure")

_moved.install()  # the book's material under its old names (attn.viz, attn.teaching, ...), until attn 0.3


def __getattr__(name: str):
    if name in ("set_language", "language"):  # attn.set_language("zh"): tables and reports in Chinese (attn._locale)
        return getattr(importlib.import_module("attn._locale"), name)
    if name in _ON_FIRST_USE or f"attn.{name}" in _moved.MODULES or f"attn.{name}" in _moved.NAMES:
        return importlib.import_module(f"attn.{name}")  # the import also sets attn.<name>; an old name warns
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
    "diagnose",
    "efficient",
    "functional",
    "generation",
    "masks",
    "measure",
    "models",
    "positional",
    "record_attention",
    "scaled_dot_product_attention",
    "variants",
]
