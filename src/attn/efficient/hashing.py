r"""Reformer's LSH attention: hash the queries into buckets, sort, and attend only inside chunks.

Keys and queries are the same vectors (*shared QK*: key ``j`` is query ``j`` normalised), so
similar vectors can be grouped by hashing them once. A random rotation ``R`` of shape
``(E, b/2)`` sends ``x`` to bucket ``argmax([xR ; -xR])`` of ``b``: vectors at a small angle
tend to share a bucket. The positions are sorted by bucket (then by position) and cut into
chunks of ``c``; each query scores the keys of its own bucket in its own chunk and the one
before. With ``n_h`` rounds of hashing, a key found in several rounds is counted once, so the
result is *exactly* full attention restricted to the union of the rounds' pairs; a query does
not attend to itself unless nothing else is in reach (with shared QK its own key would win).

Cost: ``n_h · L · 2c`` scores (:func:`lsh_score_count`) plus the hashing (``n_h · L · E · b/2``
multiply-adds) and a sort of ``L`` numbers per round, ``O(L log L)``.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from attn import _checks, masks

__all__ = ["lsh_attention", "lsh_buckets", "lsh_score_count", "random_rotations"]

SELF_SCORE = -1e5  # a query's own key: far below any real score, so it counts only when alone


def random_rotations(E: int, *, num_buckets: int, num_hashes: int = 1, seed: int = 0) -> torch.Tensor:
    """``(num_hashes, E, num_buckets // 2)`` Gaussian matrices, one per round of hashing, drawn
    from a generator seeded with ``seed``. ``num_buckets`` is ``1`` (no hashing) or even."""
    _checks.positive_int("E", E)
    _checks.positive_int("num_hashes", num_hashes)
    if num_buckets != 1:
        _checks.divisible("num_buckets", _checks.positive_int("num_buckets", num_buckets), 2,
                          why=" (a bucket per direction and its opposite)")
    g = torch.Generator().manual_seed(seed)
    return torch.randn(num_hashes, E, num_buckets // 2, generator=g)


def lsh_buckets(x: torch.Tensor, rotations: torch.Tensor) -> torch.Tensor:
    """Bucket of every vector in every round: ``argmax([x R ; -x R])``.

    Args:
        x: ``(N, L, E)``. rotations: ``(n_h, E, b/2)`` (``b/2 = 0``: one bucket).

    Returns:
        ``(N, n_h, L)`` long, in ``[0, b)``.
    """
    if rotations.shape[-1] == 0:
        return torch.zeros(x.shape[0], rotations.shape[0], x.shape[1], dtype=torch.long, device=x.device)
    proj = torch.einsum("nle,reb->nrlb", x, rotations.to(x))  # (N, n_h, L, b/2)
    return torch.cat([proj, -proj], dim=-1).argmax(dim=-1)


def lsh_score_count(L: int, *, chunk_size: int, num_hashes: int = 1) -> int:
    """Query-key scores :func:`lsh_attention` computes for one sequence and head, padding
    included: ``n_h · ceil(L/c) · c · 2c`` (each chunk against itself and the one before)."""
    _checks.positive_int("L", L)
    _checks.positive_int("num_hashes", num_hashes)
    c = min(_checks.positive_int("chunk_size", chunk_size), L)
    return num_hashes * -(-L // c) * c * 2 * c


def _gather_rows(x: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    """``x`` ``(N, T, F)``, ``index`` ``(N, R, P)`` -> ``(N, R, P, F)``: row ``index`` of each sequence."""
    N, R, P = index.shape
    return torch.gather(x, 1, index.reshape(N, R * P, 1).expand(-1, -1, x.shape[-1])).view(N, R, P, -1)


def lsh_attention(qk: torch.Tensor, v: torch.Tensor, *, num_buckets: int, chunk_size: int, num_hashes: int = 1,
                  rotations: torch.Tensor | None = None, seed: int = 0, is_causal: bool = False,
                  scale: float | None = None) -> torch.Tensor:
    """Reformer's LSH self-attention with shared queries and keys.

    Args:
        qk: ``(..., L, E)`` queries; the keys are ``qk`` normalised to unit length.
        v: ``(..., L, Ev)``.
        num_buckets: ``b``, 1 or even. chunk_size: ``c``. num_hashes: rounds ``n_h``.
        rotations: ``(n_h, E, b/2)``; default :func:`random_rotations` with ``seed``.
        is_causal: keys at or before the query only.
        scale: default ``1 / sqrt(E)``.

    Returns:
        ``(..., L, Ev)``: full attention (scores ``qk_i · k_j · scale``) over the keys that share
        query ``i``'s bucket and sit in its chunk or the chunk before, in at least one round; its
        own key only when there is none. One bucket and ``c >= L`` is full attention without the
        diagonal.
    """
    _checks.tensor("qk", qk, min_dim=2)
    _checks.tensor("v", v, min_dim=2)
    if qk.shape[:-1] != v.shape[:-1]:
        raise ValueError(f"qk and v need the same batch dimensions and length, got qk {_checks.fmt(qk.shape)}, "
                         f"v {_checks.fmt(v.shape)}")
    L, E, Ev = qk.shape[-2], qk.shape[-1], v.shape[-1]
    if rotations is None:
        rotations = random_rotations(E, num_buckets=num_buckets, num_hashes=num_hashes, seed=seed)
    if tuple(rotations.shape) != (num_hashes, E, num_buckets // 2):
        raise ValueError(f"rotations must be (num_hashes, E, num_buckets // 2) = ({num_hashes}, {E}, "
                         f"{num_buckets // 2}), got {_checks.fmt(rotations.shape)}")
    rotations = rotations.to(device=qk.device, dtype=qk.dtype)  # drawn on the CPU in float32
    c = min(_checks.positive_int("chunk_size", chunk_size), L)
    scale = 1.0 / math.sqrt(E) if scale is None else scale
    x = qk.reshape(-1, L, E)  # (N, L, E)
    N, R, dev = x.shape[0], num_hashes, x.device
    buckets = lsh_buckets(x, rotations)  # (N, R, L)
    pos = torch.arange(L, device=dev)
    order = torch.argsort(buckets * L + pos, dim=-1)  # (N, R, L) sorted by bucket, then position
    rank = torch.argsort(order, dim=-1)  # (N, R, L) where each position went
    nc = -(-L // c)
    P = nc * c
    sp = F.pad(order, (0, P - L), value=L)  # (N, R, P) sorted positions; L marks padding
    # one extra row at index L for the padding: a zero vector in bucket -1
    pad_row = lambda t: F.pad(t, (0, 0, 0, 1))  # noqa: E731
    qs = _gather_rows(pad_row(x * scale), sp).view(N, R, nc, c, E)
    ks = _gather_rows(pad_row(F.normalize(x, dim=-1)), sp).view(N, R, nc, c, E)
    vs = _gather_rows(pad_row(v.reshape(N, L, Ev)), sp).view(N, R, nc, c, Ev)
    bucket_of = F.pad(buckets, (0, 1), value=-1)  # (N, R, L + 1)
    chunk_of = F.pad(rank // c, (0, 1), value=-1)  # (N, R, L + 1) chunk of each position, per round
    qpos = sp.view(N, R, nc, c)

    def one_back(t):  # (N, R, nc, c, ...) -> (N, R, nc, 2c, ...): the chunk before, then this one
        return torch.cat([t.roll(1, dims=2), t], dim=3)

    k2, v2, kpos = one_back(ks), one_back(vs), one_back(qpos)  # (N, R, nc, 2c, E), ..., (N, R, nc, 2c)
    s = qs @ k2.transpose(-1, -2)  # (N, R, nc, c, 2c)
    # which rounds put key j in reach of query i: same bucket, key's chunk this one or the one before
    at = lambda t, p: torch.gather(t.transpose(1, 2), 1, p.reshape(N, -1, 1).expand(-1, -1, R))  # noqa: E731
    bq, cq = (at(t, qpos).view(N, R, nc, c, 1, R) for t in (bucket_of, chunk_of))
    bk, ck = (at(t, kpos).view(N, R, nc, 1, 2 * c, R) for t in (bucket_of, chunk_of))
    in_reach = (bq == bk) & (bq >= 0) & ((cq == ck) | (cq == ck + 1))  # (N, R, nc, c, 2c, R)
    count = in_reach.sum(-1)  # (N, R, nc, c, 2c) rounds that find the pair
    first = torch.arange(2 * c, device=dev) < c  # the one-back half...
    wrapped = first & (torch.arange(nc, device=dev).view(nc, 1, 1) == 0)  # ...of chunk 0 wraps round
    sb = torch.gather(bucket_of, 2, sp).view(N, R, nc, c)  # (N, R, nc, c) bucket in this round
    keep = (sb.unsqueeze(-1) == one_back(sb).unsqueeze(-2)) & (sb >= 0).unsqueeze(-1) & ~wrapped  # (N, R, nc, c, 2c)
    if is_causal:
        keep &= kpos.unsqueeze(-2) <= qpos.unsqueeze(-1)
    s = s.masked_fill(kpos.unsqueeze(-2) == qpos.unsqueeze(-1), SELF_SCORE)
    s -= count.clamp(min=1).to(s.dtype).log()  # a pair found in r rounds: weight / r in each, counted once
    s = s.masked_fill(~keep, float("-inf"))
    lse = torch.logsumexp(s, dim=-1)  # (N, R, nc, c)
    lse = lse.masked_fill(lse == float("-inf"), 0.0)  # padding queries: no key at all
    out = masks.masked_softmax(s) @ v2  # (N, R, nc, c, Ev)
    out = torch.gather(out.view(N, R, P, Ev), 2, rank.unsqueeze(-1).expand(-1, -1, -1, Ev))  # (N, R, L, Ev)
    lse = torch.gather(lse.view(N, R, P), 2, rank)  # (N, R, L)
    out = (masks.masked_softmax(lse.movedim(1, -1)).movedim(-1, 1).unsqueeze(-1) * out).sum(dim=1)  # rounds weighted by their mass
    return out.reshape(*qk.shape[:-1], Ev)
