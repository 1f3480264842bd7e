r"""Positional encodings: attention alone cannot tell order, these tell it.

Every encoding declares, in its class attribute ``mode``, where it enters the model:

- ``"input"``: added to the token embeddings before the first layer,
  ``forward(x, offset=0) -> x + PE[offset : offset + L]`` (sinusoidal, learned absolute, 2-D).
- ``"scores"``: a bias added to the attention scores inside every self-attention layer,
  ``score_bias(q, q_offset, S) -> (B|1, H|1, L, S)`` for queries at positions
  ``q_offset .. q_offset + L - 1`` and keys at ``0 .. S - 1`` (ALiBi, T5 buckets, Shaw relative).
  The bias is added to the *scaled* scores.
- ``"qk"``: rotates queries and keys after their projections,
  ``rotate(x, offset) -> x`` for ``x`` of shape ``(B, H, N, E)`` at positions
  ``offset .. offset + N - 1`` (RoPE).

:class:`attn.MultiHeadAttention` takes ``positional=`` for the last two modes and applies them in
self-attention, with or without a :class:`attn.KVCache`.
``ENCODINGS`` maps a short name (``"rope"``, ``"alibi"``, ...) to each class.

Sinusoidal encoding (Vaswani et al., 2017), for position ``pos`` and dimension pair ``i``:

.. math::

    PE_{(pos, 2i)} = \sin\!\left(pos / 10000^{2i/d}\right), \qquad
    PE_{(pos, 2i+1)} = \cos\!\left(pos / 10000^{2i/d}\right)
"""

from __future__ import annotations

import math

import torch
from torch import nn

from attn import _checks, masks

__all__ = [
    "ALiBi",
    "ENCODINGS",
    "LearnedPositionalEncoding",
    "RotaryPositionalEncoding",
    "ShawRelativePositionalBias",
    "Sinusoidal2DPositionalEncoding",
    "SinusoidalPositionalEncoding",
    "T5RelativePositionBias",
    "alibi_slopes",
    "sinusoidal_table",
    "t5_bucket",
]


def sinusoidal_table(max_len: int, d_model: int, base: float = 10000.0) -> torch.Tensor:
    """The table ``PE`` of shape ``(max_len, d_model)``; even columns sin, odd columns cos."""
    _checks.positive_int("max_len", max_len)
    _checks.positive_int("d_model", d_model)
    _checks.positive_number("base", base, " (the wavelength base, 10000 in the paper)")
    pos = torch.arange(max_len, dtype=torch.float64).unsqueeze(1)  # (max_len, 1)
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64)  # (ceil(d/2),)
    angle = pos / base ** (two_i / d_model)  # (max_len, ceil(d/2))
    pe = torch.zeros(max_len, d_model, dtype=torch.float64)
    pe[:, 0::2] = torch.sin(angle)
    pe[:, 1::2] = torch.cos(angle[:, : d_model // 2])
    return pe.float()


class SinusoidalPositionalEncoding(nn.Module):
    """Adds the fixed sinusoidal table to token embeddings: ``x + PE[offset : offset + L]``.

    Args:
        d_model: embedding width ``D``.
        max_len: longest sequence the table covers.
        base: the wavelength base (10000 in the original paper).
    """

    mode = "input"

    def __init__(self, d_model: int, max_len: int = 4096, base: float = 10000.0):
        super().__init__()
        self.d_model, self.max_len, self.base = d_model, max_len, base
        self.register_buffer("pe", sinusoidal_table(max_len, d_model, base), persistent=False)

    def encoding(self, L: int, offset: int = 0) -> torch.Tensor:
        """Rows ``offset .. offset + L - 1`` of the table, ``(L, D)``."""
        _checks.non_negative_int("offset", offset, " (the position of the first token)")
        if offset + L > self.max_len:
            raise ValueError(
                f"positions {offset}..{offset + L - 1} do not fit the positional table of max_len={self.max_len}; "
                f"build the encoding with max_len >= {offset + L}"
            )
        return self.pe[offset : offset + L]

    def forward(self, x: torch.Tensor, offset: int = 0) -> torch.Tensor:
        """``x``: ``(B, L, D)`` or ``(L, D)``. Returns the same shape."""
        _checks.tensor("x", x, min_dim=2)
        _checks.floating("x", x)
        _checks.last_dim("x", x, self.d_model, "d_model of the positional encoding")
        L = x.shape[-2]
        if offset + L > self.max_len:
            raise ValueError(
                f"x has sequence length {L} (shape {_checks.fmt(x.shape)}) but the positional table holds "
                f"max_len={self.max_len} positions" + (f" (from offset {offset})" if offset else "")
            )
        return x + self.encoding(L, offset).to(x.dtype)

    def extra_repr(self) -> str:
        return f"d_model={self.d_model}, max_len={self.max_len}, base={self.base:g}"


def _queries(q: torch.Tensor, num_heads: int | None, E: int | None = None) -> tuple[int, int, int]:
    """Check that ``q`` is ``(B, H, L, E)`` with the heads (and width) an encoding expects."""
    _checks.tensor("q", q)
    if q.dim() != 4:
        raise ValueError(f"q must have shape (B, H, L, E), got {_checks.fmt(q.shape)}")
    B, H, L, _ = q.shape
    if num_heads is not None and H != num_heads:
        raise ValueError(
            f"q has {H} heads (shape {_checks.fmt(q.shape)}, (B, H, L, E)) but the encoding was built "
            f"with num_heads={num_heads}"
        )
    if E is not None:
        _checks.last_dim("q", q, E, "d_head of the positional encoding")
    return B, H, L


# --- "input": learned absolute positions -------------------------------------------------------


class LearnedPositionalEncoding(nn.Module):
    r"""A learned vector per absolute position, added to the token embeddings (BERT, GPT-2).

    .. math::  x_t \leftarrow x_t + P_{offset + t}, \qquad P \in \mathbb{R}^{max\_len \times D}

    ``P`` is an :class:`nn.Embedding` initialised from :math:`\mathcal{N}(0, 0.02^2)`. Unlike the
    sinusoidal table it cannot extrapolate: a position never seen in training has no row.

    Args:
        d_model: embedding width ``D``.
        max_len: number of positions the table holds.

    Shape:
        ``x``: ``(B, L, D)`` or ``(L, D)``; output the same.
    """

    mode = "input"

    def __init__(self, d_model: int, max_len: int):
        super().__init__()
        _checks.positive_int("d_model", d_model)
        _checks.positive_int("max_len", max_len)
        self.d_model, self.max_len = d_model, max_len
        self.embedding = nn.Embedding(max_len, d_model)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Draw the table from N(0, 0.02²) (also what a stack's independent copies redraw)."""
        nn.init.normal_(self.embedding.weight, std=0.02)

    def encoding(self, L: int, offset: int = 0) -> torch.Tensor:
        """Rows ``offset .. offset + L - 1`` of the table, ``(L, D)``."""
        _checks.non_negative_int("offset", offset, " (the position of the first token)")
        if offset + L > self.max_len:
            raise ValueError(
                f"positions {offset}..{offset + L - 1} (sequence length {L}, offset {offset}) do not fit the "
                f"learned table of max_len={self.max_len}; a learned table cannot extrapolate"
            )
        return self.embedding.weight[offset : offset + L]  # (L, D)

    def forward(self, x: torch.Tensor, offset: int = 0) -> torch.Tensor:
        """Args: ``x`` ``(B, L, D)`` or ``(L, D)``; ``offset`` the position of ``x``'s first token.

        Returns: ``x + P[offset : offset + L]``, the shape of ``x``.
        """
        _checks.tensor("x", x, min_dim=2)
        _checks.floating("x", x)
        _checks.last_dim("x", x, self.d_model, "d_model of the positional encoding")
        return x + self.encoding(x.shape[-2], offset).to(x.dtype)

    def extra_repr(self) -> str:
        return f"d_model={self.d_model}, max_len={self.max_len}"


# --- "input": 2-D sin-cos for image patches ----------------------------------------------------


class Sinusoidal2DPositionalEncoding(nn.Module):
    r"""Fixed 2-D sin-cos encoding of a ``height x width`` grid of image patches (ViT / MAE style).

    The first half of the channels is the 1-D sinusoidal table of the patch's row, the second half
    that of its column, each of width ``D / 2``:

    .. math::  PE_{(r, c)} = \left[\, PE^{1D}_{r} \;\Vert\; PE^{1D}_{c} \,\right], \qquad
               PE^{1D} = \texttt{sinusoidal\_table}(\cdot,\ D/2)

    Patch ``(r, c)`` sits at flat position ``r * width + c`` (row-major, as ``x.flatten(2)`` of a
    ``(B, D, height, width)`` feature map gives).

    Args:
        d_model: embedding width ``D``; a multiple of 4, so each half holds whole sin/cos pairs.
        height, width: the patch grid.
        base: the wavelength base of both 1-D tables.

    Shape:
        ``x``: ``(B, height * width, D)`` or ``(height * width, D)``; output the same.
    """

    mode = "input"

    def __init__(self, d_model: int, height: int, width: int, base: float = 10000.0):
        super().__init__()
        for name, value in (("d_model", d_model), ("height", height), ("width", width)):
            _checks.positive_int(name, value)
        _checks.divisible("d_model", d_model, 4, why=" for a 2-D sin-cos encoding (half the channels for rows, "
                          "half for columns, each in sin/cos pairs)")
        self.d_model, self.height, self.width, self.base = d_model, height, width, base
        half = d_model // 2
        rows = sinusoidal_table(height, half, base)  # (height, D/2)
        cols = sinusoidal_table(width, half, base)  # (width, D/2)
        grid = torch.cat(
            [rows[:, None, :].expand(height, width, half), cols[None, :, :].expand(height, width, half)], dim=-1
        )  # (height, width, D)
        self.register_buffer("pe", grid.reshape(height * width, d_model), persistent=False)

    def table(self) -> torch.Tensor:
        """The whole encoding, ``(height * width, D)``, row-major."""
        return self.pe

    def forward(self, x: torch.Tensor, offset: int = 0) -> torch.Tensor:
        """Args: ``x`` ``(B, L, D)`` patches in row-major order, usually ``L = height * width``;
        ``offset`` the flat position of the first patch.

        Returns: ``x + PE[offset : offset + L]``, the shape of ``x``.
        """
        _checks.tensor("x", x, min_dim=2)
        _checks.floating("x", x)
        _checks.last_dim("x", x, self.d_model, "d_model of the positional encoding")
        _checks.non_negative_int("offset", offset, " (the position of the first token)")
        L, n = x.shape[-2], self.height * self.width
        if offset + L > n:
            raise ValueError(
                f"x has {L} patches (shape {_checks.fmt(x.shape)})" + (f" from offset {offset}" if offset else "")
                + f" but the grid holds height * width = {self.height} * {self.width} = {n}"
            )
        return x + self.pe[offset : offset + L].to(x.dtype)

    def extra_repr(self) -> str:
        return f"d_model={self.d_model}, height={self.height}, width={self.width}, base={self.base:g}"


# --- "scores": Shaw et al. relative embeddings ---------------------------------------------------


class ShawRelativePositionalBias(nn.Module):
    r"""Clipped relative position embeddings on the key side (Shaw, Uszkoreit & Vaswani, 2018).

    A learned vector :math:`w_r \in \mathbb{R}^E` for each clipped distance
    :math:`r = \operatorname{clip}(j - i, -k, k)`, with :math:`k` = ``max_distance``; the score of
    query ``i`` and key ``j`` gains

    .. math::  b_{ij} = \frac{q_i \cdot a_{ij}}{\sqrt{E}}, \qquad a_{ij} = w_{\operatorname{clip}(j - i, -k, k)}

    so :math:`e_{ij} = q_i \cdot (k_j + a_{ij}) / \sqrt{E}`. Only this key-side term is implemented;
    the paper's value-side term :math:`\sum_j \alpha_{ij} a^V_{ij}` would change the weighted sum
    and does not fit a score bias. All pairs farther apart than ``k`` share one vector per sign.

    Args:
        d_head: per-head width ``E``.
        num_heads: ``None`` (the paper's choice) shares the vectors across heads; an ``H`` gives
            every head its own ``2k + 1`` vectors.
        max_distance: the clipping distance ``k``.

    Shape:
        ``score_bias(q, q_offset, S)``: ``q`` ``(B, H, L, E)`` -> ``(B, H, L, S)``.
    """

    mode = "scores"

    def __init__(self, d_head: int, num_heads: int | None = None, max_distance: int = 16):
        super().__init__()
        _checks.positive_int("d_head", d_head)
        _checks.positive_int("max_distance", max_distance)
        if num_heads is not None:
            _checks.positive_int("num_heads", num_heads)
        self.d_head, self.num_heads, self.max_distance = d_head, num_heads, max_distance
        shape = (2 * max_distance + 1, d_head) if num_heads is None else (num_heads, 2 * max_distance + 1, d_head)
        self.vectors = nn.Parameter(torch.randn(shape) * 0.02)  # row k + r holds w_r

    @torch.no_grad()
    def reset_parameters(self) -> None:
        """Redraw the vectors from N(0, 0.02²), as at construction (what a stack's copies do)."""
        v = self.vectors
        v.copy_(torch.randn(v.shape, dtype=v.dtype, device=v.device) * 0.02)

    def index(self, L: int, S: int, q_offset: int = 0, device=None) -> torch.Tensor:
        """Row of ``vectors`` for each (query, key) pair: ``clip(j - i, -k, k) + k``, ``(L, S)`` long."""
        k = self.max_distance
        rel = -masks.distances(L, S, offset=q_offset, device=device)  # (L, S) j - i: positive = key after query
        return rel.clamp(-k, k) + k  # (L, S)

    def score_bias(self, q: torch.Tensor, q_offset: int, S: int) -> torch.Tensor:
        """Args: ``q`` ``(B, H, L, E)`` queries at positions ``q_offset .. q_offset + L - 1``;
        ``S`` keys at ``0 .. S - 1``.

        Returns: ``q_i · a_ij / sqrt(E)``, ``(B, H, L, S)``.
        """
        B, H, L = _queries(q, self.num_heads, self.d_head)
        _checks.non_negative_int("q_offset", q_offset, " (the position of the first token)")
        w = self.vectors.to(q.dtype)
        # Dot every query with all 2k + 1 vectors once, then pick the one each key needs.
        qw = q @ w.T if self.num_heads is None else torch.einsum("bhle,hre->bhlr", q, w)  # (B, H, L, 2k + 1)
        idx = self.index(L, S, q_offset, q.device).expand(B, H, L, S)  # (B, H, L, S)
        return qw.gather(-1, idx) / math.sqrt(self.d_head)  # (B, H, L, S)

    def extra_repr(self) -> str:
        return f"d_head={self.d_head}, num_heads={self.num_heads}, max_distance={self.max_distance}"


# --- "scores": T5 bucketed bias ------------------------------------------------------------------


def t5_bucket(
    relative_position: torch.Tensor, bidirectional: bool = True, num_buckets: int = 32, max_distance: int = 128
) -> torch.Tensor:
    r"""T5's bucket id for each relative position ``j - i`` (key minus query; Raffel et al., 2020).

    With ``bidirectional``, keys at or before the query (``j - i <= 0``) use buckets
    ``0 .. n - 1`` and keys after it ``n .. 2n - 1``, where ``n = num_buckets / 2``; otherwise all
    ``n = num_buckets`` buckets go to keys at or before the query and every later key gets bucket 0
    (a causal mask hides those). Within one sign, for the distance :math:`d = |j - i|` and
    :math:`m = n / 2`:

    .. math::  \operatorname{bucket}(d) = \begin{cases} d & d < m \\
               \min\!\left(n - 1,\; m + \left\lfloor \dfrac{\ln(d / m)}{\ln(\text{max\_distance} / m)}
               \,(n - m) \right\rfloor\right) & d \ge m \end{cases}

    Half the buckets are exact for small distances, the other half grow logarithmically up to
    ``max_distance``; all distances from about ``max_distance`` on share the last bucket.
    Distance 0 is bucket 0 (so with ``bidirectional`` bucket ``n``, "distance 0 after the query",
    is never used, as in T5).

    Args:
        relative_position: integer tensor of ``j - i``, any shape.
        bidirectional: separate buckets for keys after the query (encoders); ``False`` for decoders.
        num_buckets: buckets in all (even, at least 4, when bidirectional; at least 2 otherwise).
        max_distance: the distance at which the logarithmic buckets end; more than ``m``.

    Returns:
        long tensor of bucket ids in ``0 .. num_buckets - 1``, the shape of ``relative_position``.

    Shape: ``relative_position`` of any shape, typically ``(L, S)``; the bucket ids (long) have
    the same shape.
    """
    _checks.tensor("relative_position", relative_position, min_dim=0)
    if relative_position.is_floating_point() or relative_position.is_complex():
        raise TypeError(f"relative_position must be an integer tensor (j - i), got dtype {relative_position.dtype}")
    _checks.positive_int("num_buckets", num_buckets)
    _checks.positive_int("max_distance", max_distance)
    why = " for bidirectional buckets (half per sign)" if bidirectional else " (exact and logarithmic halves)"
    _checks.integer("num_buckets", num_buckets, 4 if bidirectional else 2, what=why)
    if bidirectional:
        _checks.divisible("num_buckets", num_buckets, 2, why=why)
    n = num_buckets // 2 if bidirectional else num_buckets  # buckets per sign
    m = n // 2  # exact buckets
    if max_distance <= m:
        raise ValueError(
            f"max_distance ({max_distance}) must exceed the {m} exactly-bucketed distances (num_buckets={num_buckets})"
        )
    rel = relative_position.long()
    if bidirectional:
        base = (rel > 0).long() * n  # keys after the query: upper half
        d = rel.abs()
    else:
        base = torch.zeros_like(rel)
        d = (-rel).clamp(min=0)  # keys after the query: distance 0
    log_ratio = torch.log(d.clamp(min=m).float() / m) / math.log(max_distance / m)  # 0 at d = m, 1 at max_distance
    far = (m + (log_ratio * (n - m)).floor().long()).clamp(max=n - 1)
    return base + torch.where(d < m, d, far)


class T5RelativePositionBias(nn.Module):
    r"""T5's relative position bias: one learned scalar per (bucket, head) (Raffel et al., 2020).

    .. math::  b_{h,ij} = \beta_{\,\operatorname{bucket}(j - i),\, h}

    with :func:`t5_bucket` mapping the distance to a bucket. The bias does not depend on the
    queries' content, so one ``(1, H, L, S)`` tensor serves the whole batch. (T5 itself drops the
    ``1/sqrt(E)`` scaling; here, as for every ``"scores"`` encoding, the bias is added to the
    scaled scores.) The table is initialised from :math:`\mathcal{N}(0, 0.02^2)`.

    Args:
        num_heads: ``H``.
        num_buckets, max_distance, bidirectional: see :func:`t5_bucket`.

    Shape:
        ``score_bias(q, q_offset, S)``: ``q`` ``(B, H, L, E)`` -> ``(1, H, L, S)``.
    """

    mode = "scores"

    def __init__(self, num_heads: int, num_buckets: int = 32, max_distance: int = 128, bidirectional: bool = True):
        super().__init__()
        _checks.positive_int("num_heads", num_heads)
        t5_bucket(torch.zeros(1, dtype=torch.long), bidirectional, num_buckets, max_distance)  # checks the arguments
        self.num_heads, self.num_buckets = num_heads, num_buckets
        self.max_distance, self.bidirectional = max_distance, bidirectional
        self.embedding = nn.Embedding(num_buckets, num_heads)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Draw the table from N(0, 0.02²) (also what a stack's independent copies redraw)."""
        nn.init.normal_(self.embedding.weight, std=0.02)

    def buckets(self, L: int, S: int, q_offset: int = 0, device=None) -> torch.Tensor:
        """Bucket of each (query, key) pair, ``(L, S)`` long."""
        rel = -masks.distances(L, S, offset=q_offset, device=device)  # (L, S) j - i: positive = key after query
        return t5_bucket(rel, self.bidirectional, self.num_buckets, self.max_distance)

    def score_bias(self, q: torch.Tensor, q_offset: int, S: int) -> torch.Tensor:
        """Args: ``q`` ``(B, H, L, E)`` (only its shape, device and dtype are used) at positions
        ``q_offset ..``; ``S`` keys at ``0 .. S - 1``.

        Returns: the bias ``(1, H, L, S)``.
        """
        _, _, L = _queries(q, self.num_heads)
        _checks.non_negative_int("q_offset", q_offset, " (the position of the first token)")
        bias = self.embedding(self.buckets(L, S, q_offset, q.device))  # (L, S, H)
        return bias.permute(2, 0, 1).unsqueeze(0).to(q.dtype)  # (1, H, L, S)

    def extra_repr(self) -> str:
        return (
            f"num_heads={self.num_heads}, num_buckets={self.num_buckets}, "
            f"max_distance={self.max_distance}, bidirectional={self.bidirectional}"
        )


# --- "scores": ALiBi -----------------------------------------------------------------------------


def alibi_slopes(num_heads: int) -> torch.Tensor:
    r"""ALiBi's head slopes (Press, Smith & Lewis, 2022), ``(H,)`` float32, all in ``(0, 1)``.

    For ``H`` a power of two, :math:`m_h = 2^{-8h/H}` for :math:`h = 1 .. H`, a geometric sequence
    from :math:`2^{-8/H}` down to :math:`2^{-8}`. For other ``H``: the slopes for the largest power
    of two :math:`P < H`, then the first :math:`H - P` of every other slope for :math:`2P`
    (:math:`h = 1, 3, 5, \dots`), which fall between the first ones.
    """
    _checks.positive_int("num_heads", num_heads)

    def geometric(n: int) -> list[float]:
        return [2.0 ** (-8.0 * h / n) for h in range(1, n + 1)]

    P = 1 << (num_heads.bit_length() - 1)  # largest power of two <= H
    slopes = geometric(P) + geometric(2 * P)[0::2][: num_heads - P]
    return torch.tensor(slopes, dtype=torch.float32)


class ALiBi(nn.Module):
    r"""Attention with Linear Biases (Press, Smith & Lewis, 2022): a penalty linear in distance.

    .. math::  b_{h,ij} = -m_h \, |i - j|

    with the fixed slopes :math:`m_h` of :func:`alibi_slopes`. The paper defines it for causal
    attention, where ``j <= i`` and :math:`|i - j| = i - j`; using the absolute distance extends it
    symmetrically to keys after the query (bidirectional encoders). Causal masking is not part of
    the bias: the caller applies it (``is_causal=True``). No parameters are learned.

    Args:
        num_heads: ``H``.

    Shape:
        ``score_bias(q, q_offset, S)``: ``q`` ``(B, H, L, E)`` -> ``(1, H, L, S)``.
    """

    mode = "scores"

    def __init__(self, num_heads: int):
        super().__init__()
        self.num_heads = num_heads
        self.register_buffer("slopes", alibi_slopes(num_heads), persistent=False)  # (H,)

    def score_bias(self, q: torch.Tensor, q_offset: int, S: int) -> torch.Tensor:
        """Args: ``q`` ``(B, H, L, E)`` (only its shape, device and dtype are used) at positions
        ``q_offset ..``; ``S`` keys at ``0 .. S - 1``.

        Returns: ``-m_h |i - j|``, ``(1, H, L, S)``.
        """
        _, _, L = _queries(q, self.num_heads)
        _checks.non_negative_int("q_offset", q_offset, " (the position of the first token)")
        distance = masks.distances(L, S, offset=q_offset, device=q.device).abs()  # (L, S) |i - j|
        bias = -self.slopes[:, None, None] * distance  # (H, L, S)
        return bias.unsqueeze(0).to(q.dtype)  # (1, H, L, S)

    def extra_repr(self) -> str:
        return f"num_heads={self.num_heads}"


# --- "qk": RoPE ----------------------------------------------------------------------------------


class RotaryPositionalEncoding(nn.Module):
    r"""Rotary position embedding, RoPE (Su et al., 2021): rotate queries and keys by their position.

    Each pair of dimensions :math:`(2i, 2i + 1)` of a vector at position :math:`p` turns by the angle
    :math:`p\,\theta_i`, :math:`\theta_i = \text{base}^{-2i/E}`:

    .. math::  \begin{pmatrix} x'_{2i} \\ x'_{2i+1} \end{pmatrix} =
               \begin{pmatrix} \cos p\theta_i & -\sin p\theta_i \\ \sin p\theta_i & \cos p\theta_i \end{pmatrix}
               \begin{pmatrix} x_{2i} \\ x_{2i+1} \end{pmatrix}

    Rotations preserve length, and :math:`R_m^\top R_n = R_{n-m}`, so the score
    :math:`(R_m q) \cdot (R_n k) = q \cdot R_{n-m} k` depends on the positions only through
    :math:`n - m`. Nothing is learned.

    Args:
        d_head: per-head width ``E``; must be even.
        base: the wavelength base.

    Shape:
        ``rotate(x, offset)``: ``x`` ``(B, H, N, E)`` (any ``(..., N, E)``) -> the same shape.
    """

    mode = "qk"

    def __init__(self, d_head: int, base: float = 10000.0):
        super().__init__()
        _checks.positive_int("d_head", d_head)
        _checks.divisible("d_head", d_head, 2, why=" (RoPE rotates pairs of dimensions)")
        _checks.positive_number("base", base, " (the wavelength base, 10000 in the paper)")
        self.d_head, self.base = d_head, base

    def angles(self, N: int, offset: int = 0, device=None) -> torch.Tensor:
        """``p * theta_i`` for positions ``p = offset .. offset + N - 1``: ``(N, E/2)``.

        Computed in float64 (float32 on Apple's MPS, which lacks it), so that angles stay exact at
        large positions; nothing is cached, the table is ``N * E / 2`` numbers.
        """
        device = torch.device("cpu") if device is None else torch.device(device)
        dtype = torch.float32 if device.type == "mps" else torch.float64
        theta = self.base ** (-torch.arange(0, self.d_head, 2, device=device, dtype=dtype) / self.d_head)  # (E/2,)
        pos = torch.arange(offset, offset + N, device=device, dtype=dtype)  # (N,)
        return pos[:, None] * theta[None, :]  # (N, E/2)

    def rotate(self, x: torch.Tensor, offset: int = 0) -> torch.Tensor:
        """Args: ``x`` ``(B, H, N, E)`` queries or keys at positions ``offset .. offset + N - 1``.

        Returns: the rotated ``x``, same shape and dtype.
        """
        _checks.tensor("x", x, min_dim=2)
        _checks.floating("x", x)
        _checks.last_dim("x", x, self.d_head, "d_head of the rotary encoding")
        _checks.non_negative_int("offset", offset, " (the position of the first token)")
        angle = self.angles(x.shape[-2], offset, x.device)  # (N, E/2)
        cos, sin = angle.cos().to(x.dtype), angle.sin().to(x.dtype)
        even, odd = x[..., 0::2], x[..., 1::2]  # (..., N, E/2) each
        out = torch.stack([even * cos - odd * sin, even * sin + odd * cos], dim=-1)  # (..., N, E/2, 2)
        return out.flatten(-2)  # (..., N, E): pairs interleaved back

    def rotation_matrix(self, pos: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
        """The block-diagonal ``(E, E)`` matrix ``R_pos``: ``rotate(x, pos)[..., 0, :] == x[..., 0, :] @ R_pos.T``.

        For teaching; :meth:`rotate` never builds it.
        """
        _checks.non_negative_int("pos", pos, " (the position to rotate by)")
        angle = self.angles(1, pos)[0]  # (E/2,)
        c, s = angle.cos(), angle.sin()
        blocks = torch.stack([torch.stack([c, -s], -1), torch.stack([s, c], -1)], -2)  # (E/2, 2, 2)
        return torch.block_diag(*blocks).to(dtype)  # (E, E)

    def extra_repr(self) -> str:
        return f"d_head={self.d_head}, base={self.base:g}"


#: Every encoding by short name, for configs and for the book's comparison tables.
ENCODINGS: dict[str, type[nn.Module]] = {
    "sinusoidal": SinusoidalPositionalEncoding,
    "learned": LearnedPositionalEncoding,
    "shaw": ShawRelativePositionalBias,
    "t5": T5RelativePositionBias,
    "rope": RotaryPositionalEncoding,
    "alibi": ALiBi,
    "sinusoidal2d": Sinusoidal2DPositionalEncoding,
}
