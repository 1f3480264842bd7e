"""The book's worked example: small enough to check with a pencil, shared by the chapters.

Three tokens with 4-dimensional embeddings and projection matrices of small integers, so that
``Q = X W_Q``, ``K = X W_K``, ``V = X W_V`` and the scores ``Q K^T`` are whole numbers, and with
``d_k = 4`` the scale ``1 / sqrt(d_k)`` is a half. The self-attention chapter computes it by hand;
multi-head splits it into two heads of width 2; the causal chapter masks it; cross-attention uses
its three tokens as the memory.

Below it, harness code the chapters call instead of defining it themselves: deep encoder stacks
and their gradient norms, attn's blocks beside PyTorch's, a shape trace (architecture); a moving
average (variants); a FLOP count on shapes (efficient); and the measurements behind the tables of
the cross-attention chapter (how well learned
cross-attention agrees with a date's true alignment) and the positional-encodings chapter (offset
matrices, score spreads along diagonals, T5's exact buckets, accuracy per position).
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterable, Iterator, Sequence

import torch

__all__ = ["DATE_DIGITS", "DATE_FIELDS", "alignment_scores", "answer_positions", "correct_per_position",
           "date_field_mass", "deep_encoder", "diagonal_spread", "head_sweep_run", "heads_removed", "kv_accuracy",
           "kv_model", "kv_sum_answer_positions",
           "layer_grad_norms", "matrices", "max_diff_from_torch", "meta_flops", "mha_flops", "mha_params",
           "offset_matrix", "own_buckets", "shape_trace", "single_head", "smooth", "softmax_jacobian_norm",
           "softmax_saturation", "token_loss", "torch_pair", "weight_on", "worked_example",
           "year_digit_breakdown"]


def worked_example() -> dict:
    """The example: ``tokens`` (3 words), ``X`` ``(3, 4)`` and ``W_Q``, ``W_K``, ``W_V`` ``(4, 4)``,
    float32 tensors (fresh copies on every call, so a chapter may change them)."""
    t = lambda rows: torch.tensor(rows, dtype=torch.float32)  # noqa: E731
    return {
        "tokens": ["the", "cat", "sat"],
        "X": t([[1, 0, 1, 0], [0, 2, 0, 2], [1, 1, 1, 1]]),
        "W_Q": t([[1, 0, 0, 1], [0, 1, 1, 0], [1, 0, 1, 0], [0, 1, 0, 0]]),
        "W_K": t([[0, 1, 1, 0], [1, 0, 0, 1], [0, 0, 1, 1], [1, 1, 0, 0]]),
        "W_V": t([[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 2, 0], [0, 0, 0, 2]]),
    }


# --- moved from the architecture / variants / efficient chapters
# Harness code the chapters call: deep stacks and their gradients, attn's blocks beside
# PyTorch's, a shape trace, a moving average, a FLOP count on shapes only.

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
    from torch import nn

    from attn import _checks
    from attn.blocks import Encoder, EncoderLayer

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
    import torch.nn.functional as F
    from torch import nn

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
    import warnings

    from torch import nn

    from attn.blocks import DecoderLayer, EncoderLayer, Transformer

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
    from attn import masks

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
    from torch import nn

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


def smooth(xs, k: int = 25) -> list[float]:
    """Trailing moving average of ``xs`` over ``k`` values (fewer at the start)."""
    from attn import _checks

    _checks.positive_int("k", k)
    xs = [float(x) for x in xs]
    return [sum(xs[max(0, i - k + 1) : i + 1]) / len(xs[max(0, i - k + 1) : i + 1]) for i in range(len(xs))]


def meta_flops(fn, n: int, *, heads: int = 4, d_head: int = 32) -> int:
    """Floating-point operations of ``fn(q, k, v)`` for one sequence of ``n`` tokens, counted on
    ``meta`` tensors of shape ``(1, heads, n, d_head)`` (shapes only: nothing is computed, so any
    ``n`` costs nothing to count). ``fn`` must accept meta tensors (a module: ``.to("meta")``)."""
    from attn import measure

    q, k, v = (torch.empty(1, heads, n, d_head, device="meta") for _ in range(3))
    return measure.flops(fn, q, k, v)

# --- moved from the cross / positional chapters
# Measurements the cross-attention and positional-encodings chapters report: the harness behind
# their tables, here so that the chapters show the idea and the result, and tests check the harness.

#: Target positions of the digits of an ISO date ``YYYY-MM-DD``, per field (hyphens have no source).
DATE_FIELDS = {"year": [0, 1, 2, 3], "month": [5, 6], "day": [8, 9]}
DATE_DIGITS = [t for ts in DATE_FIELDS.values() for t in ts]


def alignment_scores(w: torch.Tensor, pairs: list[tuple[str, str]], task) -> dict:
    """How well cross-attention weights agree with a :class:`attn.data.DateTask`'s true alignment.

    Args:
        w: ``(B, K, L, S)`` weights of ``K`` distributions per target row (heads, or their mean)
            for the ``B`` (source, target) ``pairs``, ``L >= 10`` written characters.
        pairs: the (source, target) dates the weights were recorded on.
        task: the :class:`attn.data.DateTask` (its ``alignment`` is the truth).

    Returns:
        ``{"mass": {field: (K,)}, "hits": (K,), "uniform": {field: float}}``: for the fields
        ``year``, ``month``, ``day`` and ``all digits``, the mean attention mass a digit puts on
        its true source characters (over the real source characters only); the fraction of
        digits whose most attended character is a true one; and the mass a uniform row over the
        real source characters would put there.
    """
    if w.dim() != 4 or w.shape[0] != len(pairs):
        raise ValueError(f"w must be (B, K, L, S) with B = len(pairs) = {len(pairs)}, got {tuple(w.shape)}")
    K = w.shape[1]
    groups = [*DATE_FIELDS.items(), ("all digits", DATE_DIGITS)]
    mass = {f: torch.zeros(K) for f, _ in groups}
    uniform = dict.fromkeys(mass, 0.0)
    hits = torch.zeros(K)
    for b, (src, tgt) in enumerate(pairs):
        truth = task.alignment(src, tgt)  # (10, S_b)
        wb = w[b, :, :10, : len(src)]  # (K, 10, S_b): real source keys only
        for f, ts in groups:
            mass[f] += (wb[:, ts] * truth[ts]).sum((-1, -2)) / len(ts)
            uniform[f] += (truth[ts].sum(-1) / len(src)).mean().item()
        top = wb[:, DATE_DIGITS].argmax(-1)  # (K, 8)
        hits += truth[DATE_DIGITS].gather(1, top.T).T.mean(-1)
    n = len(pairs)
    return {"mass": {f: m / n for f, m in mass.items()}, "hits": hits / n,
            "uniform": {f: u / n for f, u in uniform.items()}}


def date_field_mass(w: torch.Tensor, pairs: list[tuple[str, str]]) -> float:
    """Mean mass a date digit puts on the whole *field* it comes from (all four year digits, the
    whole month name, the whole day), ``w`` ``(B, L, S)`` one distribution per row (e.g. the mean
    of the heads) on sources ``"day month year"``."""
    total = 0.0
    for b, (src, _) in enumerate(pairs):
        day, month, _ = src.split(" ")
        spans = {"year": range(len(day) + len(month) + 2, len(src)),
                 "month": range(len(day) + 1, len(day) + 1 + len(month)), "day": range(len(day))}
        total += sum(float(w[b, t, list(spans[f])].sum()) for f, ts in DATE_FIELDS.items() for t in ts)
    return total / len(pairs) / len(DATE_DIGITS)


def year_digit_breakdown(w: torch.Tensor, pairs: list[tuple[str, str]]) -> tuple[float, float, float]:
    """Where a year digit's attention goes, ``w`` ``(B, L, S)``: the mean mass on its own source
    digit, on the three other year digits, and on the space before the year."""
    own = other = space = 0.0
    for b, (src, _) in enumerate(pairs):
        y0 = len(src) - 4  # first year digit in the source
        for t in range(4):
            own += float(w[b, t, y0 + t])
            other += float(w[b, t, y0 : y0 + 4].sum() - w[b, t, y0 + t])
            space += float(w[b, t, y0 - 1])
    n = 4 * len(pairs)
    return own / n, other / n, space / n


def offset_matrix(k: int, d: int, base: float = 10000.0) -> torch.Tensor:
    """``M_k``, ``(d, d)`` float64, block-diagonal: ``PE[pos + k] = M_k @ PE[pos]``
    for every position of the sinusoidal table (``d`` even), one 2x2 rotation by
    ``omega_i k`` per pair."""
    if d < 2 or d % 2:
        raise ValueError(f"d must be a positive even number (sin/cos pairs), got d={d}")
    omega = base ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)  # (d/2,)
    c, s = torch.cos(omega * k), torch.sin(omega * k)
    blocks = [torch.tensor([[ci, si], [-si, ci]], dtype=torch.float64)
              for ci, si in zip(c.tolist(), s.tolist(), strict=True)]
    return torch.block_diag(*blocks)  # (d, d)


def diagonal_spread(s: torch.Tensor) -> float:
    """Largest ``max - min`` along a diagonal ``n - m = r`` of scores ``s`` ``(L, S)``: 0 when the
    score depends on the positions only through their offset."""
    diagonals = [s.diagonal(r) for r in range(-s.shape[0] + 1, s.shape[1])]
    return max((d.max() - d.min()).item() for d in diagonals)


def own_buckets(buckets: torch.Tensor) -> int:
    """How many distances ``0, 1, 2, ...`` in a row have a bucket no other distance shares, given
    the buckets ``(n,)`` of distances ``0 .. n - 1`` in order."""
    b = buckets.tolist()
    count = 0
    while count < len(b) and b.count(b[count]) == 1:
        count += 1
    return count


def token_loss(model, batch: tuple[torch.Tensor, ...], mask: torch.Tensor | None = None) -> torch.Tensor:
    """Mean cross-entropy of a token model on ``batch = (tokens, targets, ...)``, both ``(B, L)``,
    over the positions with a target (``attn.data.IGNORE``, -100, elsewhere); further items of the
    batch (e.g. :func:`attn.data.kv_recall`'s ``kind``) are not used. ``mask`` (e.g. a wrong one, to
    show what it does) replaces the model's own; ``None`` keeps it. The ``loss_fn`` for
    :func:`attn.train.train`.

    Shape: ``tokens``, ``targets`` ``(B, L)`` -> a scalar."""
    import torch.nn.functional as F

    tokens, targets = batch[0], batch[1]
    logits = model(tokens) if mask is None else model(tokens, mask=mask)  # (B, L, V)
    return F.cross_entropy(logits.flatten(0, 1), targets.flatten(), ignore_index=-100)


def correct_per_position(model, tokens: torch.Tensor, targets: torch.Tensor,
                         mask: torch.Tensor | None = None) -> torch.Tensor:
    """How many of the sequences ``tokens`` ``(B, L)`` the model gets right at each position,
    ``(L,)`` long; positions whose target is ``-100`` never count. ``mask`` goes to the model."""
    with torch.no_grad():
        pred = model(tokens, mask=mask).argmax(-1)  # (B, L)
    return ((pred == targets) & (targets != -100)).sum(0)  # (L,)


# --- moved from the multi-head / self chapters
# Harness code the chapters used to define inline: a table of matrices side by side, the softmax
# saturation measurement, a head of a multi-head layer as a single head, the parameter and FLOP
# formulas, and the measurements of what each head of a trained model attends to.



def matrices(rows: Sequence, *named: tuple[str, torch.Tensor], cols: Sequence | None = None, fmt: str = ".0f"):
    """Show ``("name", matrix)`` pairs side by side as one :class:`attn.viz.Table`.

    One table row per entry of ``rows`` (the matrices' rows), one column per matrix column, headed
    ``"name col"`` with ``col`` taken from ``cols`` (default ``0, 1, ...``). Numbers are written
    with ``fmt``.

    Shape: each matrix ``(R, C)`` with ``R = len(rows)``; the matrices may differ in ``C``."""
    from attn.viz import Table  # views load on first use

    for name, M in named:
        if M.ndim != 2 or M.shape[0] != len(rows):
            raise ValueError(f"matrix {name!r} must be 2-D with {len(rows)} rows (one per entry of rows), "
                             f"got shape {tuple(M.shape)}")
    headers = [""] + [f"{name} {c}" for name, M in named for c in (cols or range(M.shape[1]))]
    body = [[r, *(v for _, M in named for v in M[i].tolist())] for i, r in enumerate(rows)]
    return Table(body, headers, floatfmt=fmt)


def softmax_jacobian_norm(p: torch.Tensor) -> torch.Tensor:
    """Frobenius norm of the softmax Jacobian ``J = diag(p) - p p^T`` for each row of ``p``.

    Shape: ``p`` ``(..., S)`` (rows of softmax weights) -> ``(...)``."""
    J = torch.diag_embed(p) - p.unsqueeze(-1) * p.unsqueeze(-2)  # (..., S, S)
    return J.flatten(-2).norm(dim=-1)


def softmax_saturation(d_k: int, scaled: bool, *, n_queries: int = 512, n_keys: int = 64,
                       seed: int = 0) -> dict[str, float]:
    """Score ``n_queries`` random queries against ``n_keys`` random keys (entries N(0, 1), width
    ``d_k``), divided by ``sqrt(d_k)`` when ``scaled``, and measure the softmax.

    Returns: ``var`` the variance of the scores, ``max_w`` the mean largest weight of a row,
    ``entropy`` the mean row entropy in nats, ``jac`` the mean :func:`softmax_jacobian_norm`."""
    from attn.masks import masked_softmax

    g = torch.Generator().manual_seed(seed)
    q = torch.randn(n_queries, d_k, generator=g)
    k = torch.randn(n_keys, d_k, generator=g)
    s = q @ k.T / (math.sqrt(d_k) if scaled else 1.0)  # (n_queries, n_keys)
    p = masked_softmax(s)
    entropy = -(p * torch.log(p.clamp_min(1e-30))).sum(-1)
    return {"var": s.var().item(), "max_w": p.max(-1).values.mean().item(),
            "entropy": entropy.mean().item(), "jac": softmax_jacobian_norm(p).mean().item()}


def single_head(mha, h: int):
    """Head index ``h`` of an :class:`attn.MultiHeadAttention` as an :class:`attn.SelfAttention`
    built from slices of the same weights: its ``W_q``, ``W_k``, ``W_v`` are head ``h``'s ``E`` rows of
    ``in_proj`` and its ``W_o`` is head ``h``'s ``E`` columns of ``out_proj`` (``W_O^(h)``), with a zero
    output bias (``b_O`` is added once, after the sum over heads). So
    ``sum(single_head(mha, h)(x)[0] for h in range(H)) + b_O`` equals ``mha(x)[0]``."""
    from attn.attention import SelfAttention

    if not 0 <= h < mha.num_heads:
        raise ValueError(f"h must be a head index in 0 .. {mha.num_heads - 1}, got {h}")
    D, E = mha.d_model, mha.d_head
    rows = slice(h * E, (h + 1) * E)  # this head's E dimensions
    W, b = mha.in_proj.weight, mha.in_proj.bias  # (3D, D), (3D,) or None: W_q; W_k; W_v stacked
    head = SelfAttention(D, E, bias=b is not None)
    with torch.no_grad():
        for i, proj in enumerate((head.W_q, head.W_k, head.W_v)):
            proj.weight.copy_(W[i * D : (i + 1) * D][rows])  # (E, D)
            if b is not None:
                proj.bias.copy_(b[i * D : (i + 1) * D][rows])  # (E,)
        head.W_o.weight.copy_(mha.out_proj.weight[:, rows])  # (D, E): W_O^(h)
        if head.W_o.bias is not None:
            head.W_o.bias.zero_()
    return head


def mha_params(D: int) -> int:
    """Parameters of multi-head attention of width ``D`` with biases: ``4 D^2 + 4 D``, whatever the
    number of heads (``W_Q``, ``W_K``, ``W_V``, ``W_O`` and their biases)."""
    return 4 * D * D + 4 * D


def mha_flops(B: int, L: int, S: int, D: int, H: int) -> dict[str, int]:
    """Floating-point operations of the matrix products of multi-head attention (a multiply-add is
    two): ``B`` sequences, ``L`` queries, ``S`` keys and values, width ``D``, ``H`` heads of width
    ``E = D / H``. Per term: ``projections`` (``W_Q`` on the queries, ``W_K`` and ``W_V`` on the
    source), ``scores`` (``Q K^T``), ``weighted sum`` (weights times ``V``) and ``output`` (``W_O``).
    The total is ``4 B D^2 (L + S) + 4 B L S D``: ``H`` cancels out."""
    if D % H:
        raise ValueError(f"H must divide D, got D = {D} and H = {H}")
    E = D // H
    return {"projections": 2 * B * L * D * D + 2 * B * S * D * 2 * D, "scores": 2 * B * H * L * S * E,
            "weighted sum": 2 * B * H * L * S * E, "output": 2 * B * L * D * D}


@contextlib.contextmanager
def heads_removed(mha, removed: Iterable[int]) -> Iterator[None]:
    """Within the ``with`` block, the heads of ``mha`` (an :class:`attn.MultiHeadAttention`) with
    indices in ``removed`` are silenced before ``W_O`` (ablation, through ``mha.head_mask``); the
    previous mask is restored afterwards."""
    removed = set(removed)
    if not removed <= set(range(mha.num_heads)):
        raise ValueError(f"removed must hold head indices in 0 .. {mha.num_heads - 1}, got {sorted(removed)}")
    before = mha.head_mask
    mha.head_mask = torch.tensor([0.0 if h in removed else 1.0 for h in range(mha.num_heads)])
    try:
        yield
    finally:
        mha.head_mask = before


def answer_positions(tokens: torch.Tensor, task) -> torch.Tensor:
    """Where each target of :func:`attn.data.kv_recall` finds its answer: position ``i - 1`` for a
    pair token's target, the pair token with the query's key for a query's. Position 0 has no
    target: ``-1``.

    Shape: ``tokens`` ``(n, T)`` -> ``(n, T)`` long."""
    n, _ = tokens.shape
    K, V = task.num_keys, task.num_values
    pos = torch.full(tokens.shape, -1)
    pos[:, 1:K] = torch.arange(K - 1)  # relation 1: the previous position
    pair_keys = tokens[:, :K] // V  # (n, K): the key of each pair token
    query_keys = tokens[:, K:] - K * V  # (n, Q)
    pos[:, K:] = (pair_keys[:, None, :] == query_keys[:, :, None]).int().argmax(-1)  # relation 2
    return pos


def kv_sum_answer_positions(tokens: torch.Tensor, task) -> tuple[torch.Tensor, torch.Tensor]:
    """The two answer positions of each query of :func:`attn.data.kv_sum`: the digit just before it
    (``i - 1``) and the pair token with its key; ``-1`` at positions without a target.

    Shape: ``tokens`` ``(n, T)`` -> two ``(n, T)`` long tensors, ``(previous, key)``."""
    K, V = task.num_keys, task.num_values
    positions = torch.arange(tokens.shape[1]).expand_as(tokens)
    is_query = (tokens >= K * V) & (tokens < task.vocab_size)  # query tokens (digits come after)
    prev_pos = torch.where(is_query, positions - 1, -1)  # relation 1: the digit just before
    asked = torch.where(is_query, tokens - K * V, -1)  # (n, T): the key each query asks for
    pair_keys = tokens[:, :K] // V  # (n, K)
    key_pos = (pair_keys[:, None, :] == asked[:, :, None]).int().argmax(-1)  # relation 2
    return prev_pos, torch.where(is_query, key_pos, -1)


def weight_on(weights: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
    """Each head's attention weight on one key position per query.

    Shape: ``weights`` ``(n, H, T, S)``, ``positions`` ``(n, T)`` (a key index per query; a negative
    index reads key 0: mask those queries out) -> ``(H, n, T)``."""
    index = positions.clamp_min(0)[:, None, :, None].expand(-1, weights.shape[1], -1, 1)
    return weights.gather(-1, index)[..., 0].transpose(0, 1)


@torch.no_grad()
def kv_accuracy(model, test: tuple[torch.Tensor, torch.Tensor, torch.Tensor],
                relations: Sequence[int] = (1, 2)) -> dict[int, float]:
    """Accuracy of a token model on a test set ``(tokens, targets, kind)`` of
    :func:`attn.data.kv_recall`, per relation (the values of ``kind``: 1 previous token, 2 matching
    key)."""
    tokens, targets, kind = test
    correct = model(tokens).argmax(-1) == targets  # (n, T)
    return {r: correct[kind == r].float().mean().item() for r in relations}


def kv_model(task, d_model: int, num_heads: int, seed: int = 0):
    """The multi-head chapter's model for ``task`` (an :class:`attn.data.KVRecall`): an
    :class:`attn.models.TokenModel` with one encoder layer, initialised from ``seed``."""
    from attn import models

    torch.manual_seed(seed)
    return models.TokenModel(task.vocab_size, d_model=d_model, num_heads=num_heads, num_layers=1,
                             max_len=task.seq_len)


def head_sweep_run(num_heads: int, seed: int, *, d_model: int = 64, steps: int = 250, batch: int = 128) -> dict:
    """One run of the multi-head chapter's head-count sweep: the chapter's two-head recipe (the
    same training batches, loss, optimiser and test set) with ``num_heads`` heads of width
    ``d_model / num_heads``, from ``seed``. ``scripts/head_sweep.py`` runs it for every setting.

    Returns:
        ``{"H", "seed", "acc": {relation: accuracy}, "loss": test loss, "curve": training losses}``.
    """
    from attn import data, train

    task = data.KVRecall()
    test = data.kv_recall(1000, task, seed=0)  # the chapter's held-out test set
    batches = [data.kv_recall(batch, task, seed=10_000 + i) for i in range(steps)]
    model = kv_model(task, d_model, num_heads, seed)
    curve = train.train(model, batches.__getitem__, token_loss, steps=steps, lr=3e-3, warmup=50,
                        seed=seed, progress=False)
    with torch.no_grad():
        loss = token_loss(model, test).item()
    return {"H": num_heads, "seed": seed, "acc": kv_accuracy(model, test), "loss": loss, "curve": curve}



# --- moved from the causal / why chapters ------------------------------------------------------
# Harness of book/causal_attention.ipynb (language-model batches, loss and evaluation, the
# token-replacement causality check, the alignment probe, what fully masked rows receive) and of
# book/why_attention.ipynb (the additive-attention RNN of the dates task and its batches, the
# long-range results table; its alignment check is alignment_scores above). Tests: tests/test_causal_chapter.py,
# tests/test_why_chapter.py.

import statistics  # noqa: E402  (this block's own imports, kept with it)
from collections.abc import Callable  # noqa: E402

import torch.nn.functional as F  # noqa: E402
from torch import nn  # noqa: E402

from attn import masks as _masks  # noqa: E402
from attn.functional import scaled_dot_product_attention as _sdpa  # noqa: E402

__all__ += [
    "AdditiveAttention", "BahdanauSeq2Seq", "causal_alignment",
    "date_training_batch", "fully_masked_outcomes", "lm_evaluate", "long_range_rows",
    "long_range_values", "next_token_windows", "seq2seq_date_loss", "token_dependency",
]


def next_token_windows(ids: torch.Tensor, n: int, length: int, *, seed: int):
    """``n`` random windows of a text, seeded: inputs ``(n, length)`` and the next token of each
    position, targets ``(n, length)`` (the inputs shifted left by one)."""
    from attn.pretraining import windows  # the one window sampler

    chunk = windows(ids, n, length + 1, seed=seed)  # (n, length + 1)
    return chunk[:, :-1], chunk[:, 1:]


@torch.no_grad()
def lm_evaluate(model: nn.Module, x: torch.Tensor, y: torch.Tensor,
                mask: torch.Tensor | None = None) -> tuple[float, float]:
    """``(loss, accuracy)`` of next-token prediction on inputs ``x`` and targets ``y``
    ``(B, T)``: mean cross-entropy in nats and the share of positions whose argmax is right."""
    logits = model(x, mask=mask)  # (B, T, V)
    loss = F.cross_entropy(logits.flatten(0, 1), y.flatten()).item()
    return loss, (logits.argmax(-1) == y).float().mean().item()


@torch.no_grad()
def token_dependency(model: nn.Module, x: torch.Tensor, vocab_size: int,
                     mask: torch.Tensor | None = None) -> torch.Tensor:
    """The causality check by perturbation, for a token model.

    Entry ``(i, t)`` of the result is the largest change of the logits at position ``i`` when
    the token at position ``t`` of ``x`` ``(1, L)`` is replaced by the next id (mod
    ``vocab_size``). A causal model gives exact zeros above the diagonal.

    Shape: ``x`` ``(1, L)`` -> ``(L, L)``, rows are outputs, columns replaced positions.
    """
    base = model(x, mask=mask)  # (1, L, V)
    cols = []
    for t in range(x.shape[1]):
        x2 = x.clone()
        x2[0, t] = (x2[0, t] + 1) % vocab_size  # another token at position t
        cols.append((model(x2, mask=mask) - base).abs().amax(-1)[0])  # (L,)
    return torch.stack(cols, dim=1)  # (L outputs, L replaced positions)


def causal_alignment(fn: Callable[..., torch.Tensor]) -> str:
    """Which causal row ``fn(q, k, v, is_causal=True)`` uses for one query and five keys:
    ``"top-left"`` (the first row of the causal matrix), ``"bottom-right"`` (the last row, what
    cached decoding needs), ``"an error"`` (it refuses the call) or ``"other"``.

    Shape: ``fn`` is called with ``q`` ``(1, 1, 8)`` and ``k``, ``v`` ``(1, 5, 8)``, seeded.
    """
    g = torch.Generator().manual_seed(5)
    q1, k5, v5 = (torch.randn(1, n, 8, generator=g) for n in (1, 5, 5))  # (1, L|S, E)
    try:
        out = fn(q1, k5, v5, is_causal=True)
    except (ValueError, RuntimeError):
        return "an error"
    rows = {"top-left": _masks.causal(1, 5), "bottom-right": _masks.causal(1, 5, offset=4)}
    for name, m in rows.items():
        if torch.allclose(out, _sdpa(q1, k5, v5, mask=m), atol=1e-6):
            return name
    return "other"


def fully_masked_outcomes(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                          mask: torch.Tensor) -> dict[str, str]:
    """What the query rows with no allowed key receive, for each way of masking the scores
    ``q k^T / sqrt(E)``: ``masked_fill`` with ``-inf``, ``-1e9`` or the dtype's minimum and then
    the softmax, and ``attn.scaled_dot_product_attention`` (its weights and its output).

    Each outcome is ``"NaN"``, ``"zeros"``, ``"uniform over blocked keys"``, ``"error: overflow"``
    (the fill value does not fit the dtype), ``"error"`` or ``"other"``.

    Shape: ``q``, ``k``, ``v`` ``(B, L, E)`` of one dtype, ``mask`` ``(B, L, S)`` bool.
    """
    empty = _masks.fully_masked_rows(mask)[..., 0]  # (B, L)
    S = mask.shape[-1]

    def describe(fn) -> str:
        try:
            w = fn()[empty]  # (rows, S)
        except RuntimeError as e:
            return "error: overflow" if "overflow" in str(e) else "error"
        if torch.isnan(w).any():
            return "NaN"
        if (w == 0).all():
            return "zeros"
        if torch.allclose(w.float(), torch.full_like(w.float(), 1 / S), atol=1e-3):
            return "uniform over blocked keys"
        return "other"

    s = q @ k.transpose(-2, -1) / k.shape[-1] ** 0.5  # (B, L, S)
    # the naive softmax, on purpose: what this function reports is how it fails
    naive = lambda fill: lambda: torch.softmax(s.masked_fill(~mask, fill), dim=-1)  # noqa: E731 on purpose
    return {
        "masked_fill(-inf)": describe(naive(float("-inf"))),
        "masked_fill(-1e9)": describe(naive(-1e9)),
        "masked_fill(finfo.min)": describe(naive(torch.finfo(q.dtype).min)),
        "attn weights": describe(lambda: _sdpa(q, k, v, mask=mask, return_weights=True)[1]),
        "attn output": describe(lambda: _sdpa(q, k, v, mask=mask)),
    }


class AdditiveAttention(nn.Module):
    """Additive (Bahdanau) attention: ``e_ij = v^T tanh(W s_{i-1} + U h_j)``, ``alpha_i =
    softmax_j(e_ij)`` over the allowed keys, context ``c_i = sum_j alpha_ij h_j``.

    Shape: ``s`` ``(B, query_size)``, ``h`` ``(B, S, key_size)``, ``key_mask`` ``(B, S)`` bool
    (``True`` = may attend) -> ``c`` ``(B, key_size)``, ``alpha`` ``(B, S)``.
    """

    def __init__(self, query_size: int, key_size: int, hidden: int):
        super().__init__()
        self.W = nn.Linear(query_size, hidden, bias=False)
        self.U = nn.Linear(key_size, hidden)
        self.v = nn.Linear(hidden, 1, bias=False)

    def forward(self, s: torch.Tensor, h: torch.Tensor, key_mask: torch.Tensor):
        scores = self.W(s)[:, None, :] + self.U(h)  # (B, S, hidden)
        e = self.v(torch.tanh(scores)).squeeze(-1)  # (B, S) scores e_ij
        alpha = _masks.masked_softmax(e, key_mask)  # (B, S)
        c = (alpha[:, :, None] * h).sum(dim=1)  # (B, key_size) context c_i
        return c, alpha


class BahdanauSeq2Seq(nn.Module):
    """An RNN encoder-decoder with additive attention: a bidirectional GRU encoder, a GRU-cell
    decoder that attends with its previous state at every step and predicts from its new state
    and the context.

    Shape: ``src`` ``(B, S)``, ``tgt_in`` ``(B, T)`` ids, ``key_mask`` ``(B, S)`` bool ->
    logits ``(B, T, V)`` and attention weights ``(B, T, S)``.
    """

    def __init__(self, src_vocab: int, tgt_vocab: int, d: int = 32):
        super().__init__()
        self.src_embed, self.tgt_embed = nn.Embedding(src_vocab, d), nn.Embedding(tgt_vocab, d)
        self.encoder = nn.GRU(d, d, batch_first=True, bidirectional=True)
        self.init_state = nn.Linear(2 * d, 2 * d)
        self.attention = AdditiveAttention(2 * d, 2 * d, d)
        self.cell = nn.GRUCell(d + 2 * d, 2 * d)
        self.head = nn.Linear(4 * d, tgt_vocab)

    def forward(self, src: torch.Tensor, tgt_in: torch.Tensor, key_mask: torch.Tensor):
        h, _ = self.encoder(self.src_embed(src))  # (B, S, 2d)
        mean = (h * key_mask[..., None]).sum(1) / key_mask.sum(1, keepdim=True)  # (B, 2d)
        s = torch.tanh(self.init_state(mean))  # (B, 2d) first decoder state
        logits, alphas = [], []
        for t in range(tgt_in.shape[1]):  # one target step after another: stays sequential
            c, alpha = self.attention(s, h, key_mask)  # (B, 2d), (B, S)
            s = self.cell(torch.cat([self.tgt_embed(tgt_in[:, t]), c], dim=-1), s)  # (B, 2d)
            logits.append(self.head(torch.cat([s, c], dim=-1)))  # (B, V)
            alphas.append(alpha)
        return torch.stack(logits, 1), torch.stack(alphas, 1)  # (B, T, V), (B, T, S)


def date_training_batch(task, step: int, n: int = 64):
    """Batch ``step`` of the dates task (seeded by the step): ``src``, ``tgt_in``, ``tgt_out`` and
    ``key_mask`` ``(B, S)``, ``True`` on real source characters."""
    src, tgt_in, tgt_out, _ = task.batch(task.sample(n, seed=1000 + step))
    return src, tgt_in, tgt_out, src != 0


def seq2seq_date_loss(model: nn.Module, batch) -> torch.Tensor:
    """Cross-entropy ``()`` of ``model(src, tgt_in, key_mask)`` against ``tgt_out``, padding
    (id 0) not counted; ``batch`` as :func:`date_training_batch` gives it."""
    src, tgt_in, tgt_out, key_mask = batch
    logits, _ = model(src, tgt_in, key_mask)
    return F.cross_entropy(logits.flatten(0, 1), tgt_out.flatten(), ignore_index=0)


def long_range_values(runs: list[dict], model: str, task: str, n: int, key: str) -> list:
    """The values of ``key`` over the seeds of one cell (model, task, length) of the stored
    long-range runs (``attn.efficient.measured("long_range")["runs"]``)."""
    return [r[key] for r in runs if (r["model"], r["task"], r["n"]) == (model, task, n)]


def long_range_rows(runs: list[dict]) -> list[list]:
    """One table row per task and length of the long-range runs: task, ``n``, the distance of the
    answer, then per model (LSTM, Transformer) its accuracy over the seeds as
    ``"mean [min, max]"`` and its median training CPU seconds."""
    rows = []
    for task in ("far", "near"):
        for n in sorted({r["n"] for r in runs}):
            row = [task, n, long_range_values(runs, "LSTM", task, n, "distance")[0]]
            for model in ("LSTM", "Transformer"):
                acc = long_range_values(runs, model, task, n, "accuracy")
                cpu = long_range_values(runs, model, task, n, "train_cpu_seconds")
                row += [f"{statistics.mean(acc):.2f} [{min(acc):.2f}, {max(acc):.2f}]",
                        f"{statistics.median(cpu):.1f}"]
            rows.append(row)
    return rows
