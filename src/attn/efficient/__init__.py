"""Efficient attention: what really saves compute and memory on long sequences, and what it costs.

- ``~attn.efficient.tiled``: exact attention in tiles with the online softmax (FlashAttention's
  algorithm in PyTorch): ``O(L)`` memory, same result.
- ``~attn.efficient.sparse``: sliding-window attention computed in bands (``O(L·w)``), the
  Longformer and BigBird patterns on top of it, and Sparse Transformer's strided pattern.
- ``~attn.efficient.hashing``: Reformer's LSH attention (hash, sort, attend inside chunks).
- ``~attn.efficient.linear``: kernel (linear) attention, parallel and recurrent; Linformer.
- ``~attn.efficient.memory``: grouped-query / multi-query attention, gradient checkpointing.
- ``~attn.efficient.recurrence``: Transformer-XL-style segment recurrence with relative positions.
- ``~attn.efficient.layers``: one self-attention layer with the attention step swapped, to
  train the same model with each.

Shapes follow the package legend (``B, H, L, S, E``); masks are ``True`` = may attend.
"""

from attn import _moved
from attn.efficient.hashing import lsh_attention, lsh_buckets, lsh_score_count, random_rotations
from attn.efficient.layers import KINDS, EfficientSelfAttention, swap_attention
from attn.efficient.linear import (
    LinformerProjection,
    elu_feature_map,
    linear_attention,
    linear_attention_recurrent,
    linformer_attention,
)
from attn.efficient.memory import (
    GroupedQueryAttention,
    checkpointed,
    kv_cache_bytes,
    saved_activation_bytes,
)
from attn.efficient.recurrence import SegmentRecurrentLM
from attn.efficient.sparse import (
    banded_attention,
    bigbird_attention,
    longformer_attention,
    random_keys,
    strided_attention,
    strided_score_count,
)
from attn.efficient.tiled import online_softmax_steps, online_softmax_update, tiled_attention

__all__ = [
    "KINDS",
    "EfficientSelfAttention",
    "GroupedQueryAttention",
    "LinformerProjection",
    "SegmentRecurrentLM",
    "banded_attention",
    "bigbird_attention",
    "checkpointed",
    "elu_feature_map",
    "kv_cache_bytes",
    "linear_attention",
    "linear_attention_recurrent",
    "linformer_attention",
    "longformer_attention",
    "lsh_attention",
    "lsh_buckets",
    "lsh_score_count",
    "online_softmax_steps",
    "online_softmax_update",
    "random_keys",
    "random_rotations",
    "saved_activation_bytes",
    "strided_attention",
    "strided_score_count",
    "swap_attention",
    "tiled_attention",
]


def __getattr__(name: str):
    return _moved.attribute(__name__, name)  # names that moved to attn.book, until attn 0.3
