"""Attention masks, with one convention: a boolean mask is ``True`` where attention is allowed.

That is the meaning used by :func:`torch.nn.functional.scaled_dot_product_attention`. Every mask
here has shape ``(L, S)`` or ``(B, L, S)``: row ``i`` says which keys query ``i`` may look at.
Other conventions readers meet are converted at the border:

- ``nn.MultiheadAttention``'s ``key_padding_mask`` is ``True`` where a key must be *ignored*:
  :func:`from_key_padding_mask`;
- additive masks hold ``0`` (keep) and ``-inf`` (remove): :func:`to_additive` and :func:`from_additive`.

The mask algebra lives here and nowhere else: :func:`distances` is the one grid of query minus key
positions that the masks here and the relative positions of :mod:`attn.positional` and
:mod:`attn.efficient` read, :func:`combine` intersects boolean masks,
:func:`restrict` blocks pairs in a boolean *or* additive mask, :func:`add_bias` adds a score bias,
and :func:`masked_softmax` is the one softmax every attention in the package calls.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from attn import _checks

__all__ = [
    "add_bias",
    "bigbird",
    "causal",
    "combine",
    "cross_padding",
    "dilated",
    "distances",
    "distances_between",
    "from_additive",
    "from_key_padding_mask",
    "fully_masked_rows",
    "local_global",
    "masked_softmax",
    "padding",
    "prefix_lm",
    "random_keys",
    "restrict",
    "seeded_uniform",
    "sliding_window",
    "to_additive",
]


def _positions(L: int, S: int | None, offset: int, device) -> tuple[torch.Tensor, torch.Tensor]:
    """Query positions ``offset .. offset + L - 1`` ``(L,)`` and key positions ``0 .. S - 1`` ``(S,)``."""
    S = L if S is None else S
    _checks.positive_int("L", L)
    _checks.positive_int("S", S)
    _checks.integer("offset", offset)
    return torch.arange(L, device=device) + offset, torch.arange(S, device=device)


def distances(L: int, S: int | None = None, *, offset: int = 0, device=None) -> torch.Tensor:
    """How far key ``j`` lies before query ``i``: ``(i + offset) - j`` for every pair.

    The one grid of the position algebra: :func:`causal` keeps ``d >= 0``, :func:`sliding_window`
    ``|d| < window``, :func:`dilated` the multiples of ``dilation``; ALiBi, T5 and Shaw
    (:mod:`attn.positional`) read their relative positions from it (T5's ``j - i`` is ``-d``).

    Args:
        L: number of queries. S: number of keys (default ``L``).
        offset: query ``i`` sits at position ``i + offset``, as in :func:`causal` (``S - L``: the
            ``L`` queries are the last ``L`` of ``S`` positions).
        device: where to build it.

    Returns:
        long tensor ``(L, S)``: positive where the key comes before the query, ``0`` at the query's
        own position, negative after it.
    """
    return distances_between(*_positions(L, S, offset, device))  # (L, S)


def distances_between(query_positions: torch.Tensor, key_positions: torch.Tensor) -> torch.Tensor:
    """Query position minus key position for every pair, from positions given as tensors: the
    general form of :func:`distances`, for kernels whose keys are not ``0 .. S - 1`` (a block's slab
    of keys, the random keys of each query).

    Shape: ``query_positions`` ``(..., L)`` and ``key_positions`` ``(..., S)`` (batch dimensions
    that broadcast) -> ``(..., L, S)``.
    """
    return query_positions.unsqueeze(-1) - key_positions.unsqueeze(-2)  # (..., L, 1) - (..., 1, S)


def causal(L: int, S: int | None = None, *, offset: int = 0, device=None) -> torch.Tensor:
    """Query ``i`` may attend key ``j`` when ``j <= i + offset``.

    Args:
        L: number of queries. S: number of keys (default ``L``).
        offset: ``0`` aligns the top-left corner, as ``is_causal=True`` in PyTorch does;
            ``S - L`` aligns the bottom-right corner, which is what a decoder with ``S - L`` cached
            keys needs (query ``i`` sits at absolute position ``S - L + i``) and what
            ``is_causal=True`` means everywhere in ``attn``. The two agree when ``L == S``.

    Returns:
        bool tensor of shape ``(L, S)``.
    """
    # distances(L, S, offset=offset) >= 0, from the same positions, compared without forming the
    # (L, S) grid of longs (eight times the memory of the mask, and ten times the time at L = 2048).
    i, j = _positions(L, S, offset, device)
    return j.unsqueeze(0) <= i.unsqueeze(1)  # (L, S): key j at or before query i


def padding(lengths: Sequence[int] | torch.Tensor, S: int | None = None, *, L: int | None = None) -> torch.Tensor:
    """Keys past each sequence's length are blocked.

    Args:
        lengths: ``(B,)`` true length of each sequence.
        S: padded key length (default: the largest length).
        L: if given, the mask is expanded to ``(B, L, S)``; otherwise it is ``(B, 1, S)``, which
            broadcasts over queries.

    Returns:
        bool tensor ``(B, 1, S)`` or ``(B, L, S)``.
    """
    lengths = torch.as_tensor(lengths)
    if lengths.numel() == 0:
        raise ValueError("lengths is empty: need one length per sequence in the batch")
    if lengths.dim() != 1 or lengths.dtype.is_floating_point or lengths.dtype == torch.bool:
        raise ValueError(f"lengths must be a 1-D sequence of integers, got shape {_checks.fmt(lengths.shape)} dtype {lengths.dtype}")
    S = int(lengths.max()) if S is None else S
    _checks.positive_int("S", S)
    _checks.entries("lengths", lengths, 0, S, high_name="S")
    keep = torch.arange(S, device=lengths.device).unsqueeze(0) < lengths.unsqueeze(1)  # (B, S)
    keep = keep.unsqueeze(1)  # (B, 1, S)
    if L is not None:
        keep = keep.expand(-1, _checks.positive_int("L", L), -1)  # (B, L, S)
    return keep


def cross_padding(src_lengths, L: int, S: int | None = None) -> torch.Tensor:
    """Cross-attention mask ``(B, L, S)``: every target query may see the real source tokens only."""
    return padding(src_lengths, S, L=L)


def sliding_window(
    L: int, S: int | None = None, *, window: int, is_causal: bool = False, offset: int = 0, device=None
) -> torch.Tensor:
    """Local attention: query ``i`` at position ``i + offset`` sees key ``j`` when ``|i + offset - j| < window``,
    or, with ``is_causal``, only the past part of the window: ``0 <= i + offset - j < window``.

    Args:
        L: number of queries. S: number of keys (default ``L``).
        window: reach of the window (``1`` = each token sees only itself).
        is_causal: keep only keys at or before the query.
        offset: as in :func:`causal`: ``0`` aligns the top-left corner; ``S - L`` puts the ``L``
            queries at the last ``L`` of ``S`` positions (the bottom-right alignment of
            ``is_causal`` in :func:`attn.scaled_dot_product_attention`), as a segment that attends
            to a memory of ``S - L`` earlier keys needs.

    Returns a boolean ``(L, S)`` mask, ``True`` = may attend.
    """
    _checks.positive_int("window", window)
    d = distances(L, S, offset=offset, device=device)  # (L, S): how far key j lies before query i
    return (d >= 0) & (d < window) if is_causal else d.abs() < window


def dilated(L: int, S: int | None = None, *, window: int, dilation: int, is_causal: bool = False) -> torch.Tensor:
    """Dilated sliding window: ``|i - j|`` a multiple of ``dilation`` and below ``window * dilation``
    (with ``is_causal``, ``i - j`` itself, so only keys at or before the query).

    Returns a boolean ``(L, S)`` mask (``S`` defaults to ``L``), ``True`` = may attend.
    """
    _checks.positive_int("window", window)
    _checks.positive_int("dilation", dilation)
    d = distances(L, S)  # (L, S)
    reach = d if is_causal else d.abs()
    return (reach >= 0) & (reach < window * dilation) & (reach % dilation == 0)


def local_global(L: int, S: int | None = None, *, window: int, global_tokens: Sequence[int] = (0,)) -> torch.Tensor:
    """Longformer-style: a sliding window, plus global tokens that see and are seen by everyone.

    Returns a boolean ``(L, S)`` mask (``S`` defaults to ``L``), ``True`` = may attend.
    """
    keep = sliding_window(L, S, window=window)
    S_ = keep.shape[1]
    for g in global_tokens:
        if not 0 <= g < min(L, S_):
            raise ValueError(f"global token index {g} is outside [0, {min(L, S_)})")
        keep[g, :] = True
        keep[:, g] = True
    return keep


def seeded_uniform(seed: int):
    """A tiny portable random stream (mulberry32) giving floats in ``[0, 1)``.

    Its 32-bit integer arithmetic is specified in full, so any language can reproduce a seed's
    numbers exactly (``torch.Generator``'s stream is defined by PyTorch alone): a :func:`bigbird`
    pattern can be rebuilt anywhere from its seed.
    """
    M = 0xFFFFFFFF
    a = int(seed) & M
    while True:
        a = (a + 0x6D2B79F5) & M
        t = ((a ^ (a >> 15)) * (a | 1)) & M
        t = ((t + (((t ^ (t >> 7)) * (t | 61)) & M)) & M) ^ t
        yield ((t ^ (t >> 14)) & M) / 4294967296


def random_keys(L: int, S: int | None = None, *, num_random: int, seed: int = 0) -> torch.Tensor:
    """``num_random`` distinct random keys for each of ``L`` queries: BigBird's random part, seeded.

    Query ``i`` (in order) draws its keys by a partial Fisher-Yates shuffle of ``0 .. S-1`` driven
    by :func:`~attn.masks.seeded_uniform`: position ``r`` swaps with ``r + floor(u · (S - r))``, and the first
    ``num_random`` entries are its keys. A seed gives one pattern wherever it is rebuilt; this is
    the one generator of the package (:func:`~attn.masks.bigbird` and ``attn.efficient.bigbird_attention``
    take their keys from it).

    Returns:
        long tensor ``(L, num_random)`` of key indices in ``[0, S)`` (``S`` defaults to ``L``).
    """
    _checks.positive_int("L", L)
    S = L if S is None else _checks.positive_int("S", S)
    _checks.non_negative_int("num_random", num_random)
    if num_random > S:
        raise ValueError(f"num_random ({num_random}) cannot exceed the number of keys S ({S})")
    rng = seeded_uniform(seed)
    out = []
    for _ in range(L):
        keys: dict[int, int] = {}  # the entries of 0 .. S-1 the shuffle moved: O(num_random), not O(S)
        for r in range(num_random):
            j = r + int(next(rng) * (S - r))
            keys[r], keys[j] = keys.get(j, j), keys.get(r, r)
        out.append([keys[r] for r in range(num_random)])
    return torch.tensor(out, dtype=torch.long).reshape(L, num_random)  # (L, r)


def bigbird(
    L: int,
    S: int | None = None,
    *,
    window: int,
    global_tokens: Sequence[int] = (0,),
    num_random: int = 2,
    seed: int = 0,
) -> torch.Tensor:
    """BigBird-style: window + global tokens + ``num_random`` random keys per query (seeded).

    The random keys are :func:`random_keys` (at most ``S`` of them), so a seed gives one pattern
    wherever it is rebuilt.

    Returns a boolean ``(L, S)`` mask (``S`` defaults to ``L``), ``True`` = may attend.
    """
    keep = local_global(L, S, window=window, global_tokens=global_tokens)
    _checks.non_negative_int("num_random", num_random)
    S_ = keep.shape[1]
    keys = random_keys(L, S_, num_random=min(num_random, S_), seed=seed)  # (L, r)
    keep[torch.arange(L).unsqueeze(1), keys] = True
    return keep


def prefix_lm(L: int, prefix: int) -> torch.Tensor:
    """Prefix LM (as in T5's and UniLM's prefix mode): the first ``prefix`` tokens see each other
    in full; the rest is causal.

    Returns a boolean ``(L, L)`` mask, ``True`` = may attend.
    """
    _checks.integer("prefix", prefix, 0, L, high_name="L")
    keep = causal(L)
    keep[:, :prefix] = True
    return keep


def combine(*masks: torch.Tensor | None) -> torch.Tensor | None:
    """Intersect boolean masks (a pair is allowed only if every mask allows it); ``None`` is ignored.

    Shapes broadcast, e.g. ``combine(causal(L), padding(lengths))`` gives ``(B, L, L)``.
    """
    out = None
    for n, m in enumerate(masks):
        if m is None:
            continue
        if not isinstance(m, torch.Tensor) or m.dtype != torch.bool:
            got = m.dtype if isinstance(m, torch.Tensor) else type(m).__name__
            raise TypeError(f"combine() takes boolean masks (True = may attend); argument {n} is {got}")
        if out is not None:
            try:
                torch.broadcast_shapes(out.shape, m.shape)
            except RuntimeError:
                raise ValueError(
                    f"combine() got masks of shapes {_checks.fmt(out.shape)} and {_checks.fmt(m.shape)}, which do "
                    f"not broadcast (argument {n} against the ones before it): each must be (L, S), (B, L, S) "
                    "or broadcast to one of them"
                ) from None
        out = m if out is None else out & m
    return out


def restrict(mask: torch.Tensor | None, allowed: torch.Tensor) -> torch.Tensor:
    """Block in ``mask`` every pair that the boolean ``allowed`` blocks; the result keeps ``mask``'s form.

    Args:
        mask: ``None``, a boolean mask (``True`` = may attend) or an additive one (``0``/``-inf``,
            or any score bias).
        allowed: boolean, broadcasting with ``mask``.

    Returns:
        ``allowed`` if ``mask`` is ``None``; ``mask & allowed`` for a boolean mask; for an additive
        mask, ``mask`` with ``-inf`` wherever ``allowed`` is ``False``.

    Shape: ``mask`` and ``allowed`` broadcast, e.g. ``(B, 1, L, S)`` with ``(L, S)``.
    """
    _checks.tensor("allowed", allowed)
    if allowed.dtype != torch.bool:
        raise TypeError(f"allowed must be bool (True = may attend), got dtype {allowed.dtype}")
    if mask is None:
        return allowed
    if mask.dtype == torch.bool:
        return mask & allowed
    return mask.masked_fill(~allowed, float("-inf"))


def add_bias(mask: torch.Tensor | None, bias: torch.Tensor) -> torch.Tensor:
    """Add a floating score bias (ALiBi, T5, ...) to a mask; the result is additive.

    A boolean ``mask`` becomes ``-inf`` where it blocks; an additive one is added; ``None`` gives
    ``bias``. Shapes broadcast.

    Shape: ``mask`` and ``bias`` broadcast, e.g. ``(B, H, L, S)`` with ``(H, L, S)``.
    """
    _checks.tensor("bias", bias)
    _checks.floating("bias", bias)
    if mask is None:
        return bias
    if mask.dtype == torch.bool:
        return bias.masked_fill(~mask, float("-inf"))
    return mask + bias


def masked_softmax(scores: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
    """``softmax(scores + mask)`` over the last dimension (the keys), safe for rows with no key.

    A row whose keys are all blocked would be ``0 / 0 = NaN``; its weights are defined as zeros,
    and it passes zero gradient back (not NaN) to the scores and to an additive mask or bias.
    float16/bfloat16 scores are normalised in float32 (``exp`` of large scores is where half
    precision loses most) and returned in their own dtype.

    Args:
        scores: ``(..., L, S)``.
        mask: ``None``, boolean (``True`` = may attend) or additive, broadcasting to ``scores``.

    Returns:
        weights of the shape and dtype of ``scores``; each row sums to one or is all zeros.
    """
    dtype = scores.dtype
    if dtype in (torch.float16, torch.bfloat16):
        scores = scores.float()
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf")) if mask.dtype == torch.bool else scores + mask
    empty = (scores == float("-inf")).all(dim=-1, keepdim=True)  # (..., L, 1): no key left
    # Softmax a row of zeros instead of a row of -inf, then zero it: masked_fill sends no gradient
    # through the entries it replaces, so the NaN of 0/0 never reaches backward.
    weights = torch.softmax(scores.masked_fill(empty, 0.0), dim=-1)  # (..., L, S)
    return weights.masked_fill(empty, 0.0).to(dtype)


def from_key_padding_mask(key_padding_mask: torch.Tensor) -> torch.Tensor:
    """Convert ``nn.MultiheadAttention``'s ``key_padding_mask`` (``(B, S)``, ``True`` = ignore) to
    this package's convention, shaped ``(B, 1, S)`` so it broadcasts over queries."""
    _checks.tensor("key_padding_mask", key_padding_mask)
    if key_padding_mask.dtype != torch.bool:
        raise TypeError(f"key_padding_mask must be bool (True = ignore), got dtype {key_padding_mask.dtype}")
    if key_padding_mask.dim() != 2:
        raise ValueError(f"key_padding_mask must have shape (B, S), got {_checks.fmt(key_padding_mask.shape)}")
    return (~key_padding_mask).unsqueeze(1)  # (B, 1, S)


def to_additive(mask: torch.Tensor, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """Boolean mask -> additive mask: ``0`` where allowed, ``-inf`` where blocked.

    ``-inf`` is exact in every floating dtype; a large negative constant such as ``-1e9`` is not
    (it overflows to ``-inf`` in float16 and stops being "large" next to big scores).

    Shape: same as ``mask`` (any ``(..., L, S)``).
    """
    _checks.tensor("mask", mask)
    if mask.dtype != torch.bool:
        raise TypeError(f"mask must be bool (True = may attend), got dtype {mask.dtype}")
    if not dtype.is_floating_point:
        raise TypeError(f"dtype must be a floating dtype, got {dtype}")
    out = torch.zeros(mask.shape, dtype=dtype, device=mask.device)
    return out.masked_fill(~mask, float("-inf"))


def from_additive(mask: torch.Tensor) -> torch.Tensor:
    """Additive mask -> boolean: a pair is allowed unless its additive value is ``-inf``.

    Shape: same as ``mask`` (any ``(..., L, S)``).
    """
    _checks.tensor("mask", mask)
    _checks.floating("mask", mask)
    return mask != float("-inf")


def fully_masked_rows(mask: torch.Tensor) -> torch.Tensor:
    """``True`` for query rows that may attend to no key at all; shape ``mask.shape[:-1] + (1,)``.

    Works for boolean and additive masks.

    Shape: ``(..., L, S)`` in, ``(..., L, 1)`` out.
    """
    allowed = mask if mask.dtype == torch.bool else mask != float("-inf")
    return ~allowed.any(dim=-1, keepdim=True)
