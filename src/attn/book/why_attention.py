"""What "Why attention" measures before attention is taught: the hops a token needs to reach the
last position through a recurrence and through attention (the chapter's idea figure and pencil
example), the time of a recurrent layer and of
self-attention per length, the sequential depth of a computation, the gradient an output receives
from inputs far back, the depth a convolution stack needs to reach them, the additive-attention RNN
of the dates task (Bahdanau et al., 2015), and the table of the stored long-range runs
(``scripts/long_range.py``).

Tests: tests/test_why_chapter.py.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Mapping

import torch
import torch.nn.functional as F
from torch import nn

from attn import _checks, masks
from attn.measure import seconds

__all__ = ["AdditiveAttention", "BahdanauSeq2Seq", "autograd_depth", "date_training_batch", "gradient_by_distance",
           "hops", "layer_times", "reading_graph", "layers_to_reach", "long_range_rows", "long_range_values", "seq2seq_date_loss"]


KINDS = ("rnn", "attention")


def reading_graph(n: int, kind: str) -> list[tuple[str, str]]:
    """The edges ``(from, to)`` along which ``n`` tokens reach the outputs of one layer.

    ``"rnn"``: token ``x_t`` enters state ``h_t``, and ``h_{t-1}`` enters ``h_t`` (a chain of ``n``
    states). ``"attention"``: every token ``x_j`` enters every output ``z_i`` directly. Nodes are
    named ``"x1"``, ``"h1"``, ``"z1"``, ..., positions counted from 1.
    """
    _checks.positive_int("n", n)
    if kind == "rnn":
        return ([(f"x{t}", f"h{t}") for t in range(1, n + 1)]
                + [(f"h{t - 1}", f"h{t}") for t in range(2, n + 1)])
    if kind == "attention":
        return [(f"x{j}", f"z{i}") for i in range(1, n + 1) for j in range(1, n + 1)]
    raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")


def hops(n: int, kind: str) -> list[int]:
    """The path length from each token to the last position's output: entry ``j - 1`` is the
    number of edges of :func:`reading_graph` from ``x_j`` to ``h_n`` (``"rnn"``) or ``z_n``
    (``"attention"``), found by breadth-first search. A recurrence gives ``n - j + 1``, attention 1."""
    edges = reading_graph(n, kind)
    target = f"{'h' if kind == 'rnn' else 'z'}{n}"
    into: dict[str, list[str]] = {}
    for a, b in edges:
        into.setdefault(b, []).append(a)
    dist, frontier = {target: 0}, [target]
    while frontier:  # walk the edges backwards from the target
        nxt = []
        for node in frontier:
            for a in into.get(node, []):
                if a not in dist:
                    dist[a] = dist[node] + 1
                    nxt.append(a)
        frontier = nxt
    return [dist[f"x{j}"] for j in range(1, n + 1)]


def layer_times(layers: Mapping[str, Callable], lengths, *, batch: int, width: int,
                min_run_time: float = 0.02, clock: str = "wall") -> dict[tuple[str, int, str], float]:
    """Median seconds of each sequence layer, forward (``"fwd"``) and forward plus backward
    (``"fwd+bwd"``), on a random batch ``(batch, n, width)`` for each length ``n``, timed with
    :func:`attn.measure.seconds` on ``clock`` (``"process"`` on one thread: what other programs barely change).
    A layer returns ``(output, extra)``, as ``nn.LSTM`` and the attention modules of ``attn`` do.
    Returns ``{(name, n, kind): seconds}``."""
    times = {}
    for n in lengths:
        x = torch.randn(batch, n, width, requires_grad=True)  # (B, n, D)
        for name, layer in layers.items():
            f = lambda x, layer=layer: layer(x)[0]  # noqa: E731  (B, n, D)
            for kind, stmt in (("fwd", "f(x)"), ("fwd+bwd", "f(x).sum().backward()")):
                times[name, n, kind] = seconds(stmt, f=f, x=x, min_run_time=min_run_time, clock=clock)
    return times


def autograd_depth(out) -> int:
    """The longest chain of autograd nodes from the tensor ``out`` back to a leaf: the number of
    operations that must run one after another to compute it, whatever the hardware (iterative,
    no recursion limit). A fused operation counts once."""
    depth, stack = {}, [(out.grad_fn, False)]
    while stack:
        node, expanded = stack.pop()
        if node in depth:
            continue
        parents = [p for p, _ in node.next_functions if p is not None]
        if expanded:
            depth[node] = 1 + max((depth[p] for p in parents), default=0)
        else:
            stack.append((node, True))
            stack.extend((p, False) for p in parents if p not in depth)
    return depth[out.grad_fn]


def gradient_by_distance(make_layer: Callable, length: int, width: int, seed: int):
    """How strongly the last output of a fresh layer depends on each input, at initialisation.

    Seeds torch with ``seed``, builds ``make_layer()`` in float64 (recurrent gradients get too small
    for float32), and returns the norm of the gradient of ``u . y_last`` (``u`` a random direction)
    with respect to each input, ``(length,)``: entry ``k`` is the input ``k`` positions before the
    last one. The layer maps ``(1, length, width)`` to ``(output, extra)``.
    """
    torch.manual_seed(seed)
    layer = make_layer().double()
    x = torch.randn(1, length, width, dtype=torch.float64, requires_grad=True)  # (1, N, D)
    u = torch.randn(width, dtype=torch.float64)
    (layer(x)[0][0, -1] @ u).backward()
    return x.grad[0].norm(dim=-1).flip(0)  # (N,): entry k = distance k from the last position


def layers_to_reach(distance: int, kernel: int, dilated: bool, width: int = 4) -> int:
    """How many causal ``Conv1d`` layers (kernel ``kernel``, dilation ``kernel ** depth`` when
    ``dilated``, else 1; tanh between) must be stacked before the last output depends on the input
    ``distance`` positions back, measured: the first depth at which its gradient is not exactly 0."""
    torch.manual_seed(0)
    x = torch.randn(1, width, distance + 1, requires_grad=True)  # (1, channels, n)
    h, depth = x, 0
    while True:
        dilation = kernel**depth if dilated else 1
        conv = nn.Conv1d(width, width, kernel, dilation=dilation)
        h = torch.tanh(conv(F.pad(h, ((kernel - 1) * dilation, 0))))  # causal padding keeps the length
        depth += 1
        (g,) = torch.autograd.grad(h[0, :, -1].sum(), x, retain_graph=True)
        if g[0, :, 0].abs().sum() > 0:  # the first input now reaches the last output
            return depth


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
        alpha = masks.masked_softmax(e, key_mask)  # (B, S)
        c = (alpha[:, :, None] * h).sum(dim=1)  # (B, key_size) context c_i
        return c, alpha


class BahdanauSeq2Seq(nn.Module):
    """An RNN encoder-decoder with additive attention: a bidirectional GRU encoder, a GRU-cell
    decoder that attends with its previous state at every step and predicts from its new state
    and the context.

    ``attention`` replaces the additive attention by another module with its interface
    (``(s, h, key_mask) -> (c, alpha)``, query and key size ``2 d``).

    Shape: ``src`` ``(B, S)``, ``tgt_in`` ``(B, L)`` ids, ``key_mask`` ``(B, S)`` bool ->
    logits ``(B, L, vocab_size)`` and attention weights ``(B, L, S)``.
    """

    def __init__(self, src_vocab: int, tgt_vocab: int, d: int = 32, attention: nn.Module | None = None):
        super().__init__()
        self.src_embed, self.tgt_embed = nn.Embedding(src_vocab, d), nn.Embedding(tgt_vocab, d)
        self.encoder = nn.GRU(d, d, batch_first=True, bidirectional=True)
        self.init_state = nn.Linear(2 * d, 2 * d)
        # any module with AdditiveAttention's interface: (s, h, key_mask) -> (c, alpha)
        self.attention = AdditiveAttention(2 * d, 2 * d, d) if attention is None else attention
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
            logits.append(self.head(torch.cat([s, c], dim=-1)))  # (B, vocab_size)
            alphas.append(alpha)
        return torch.stack(logits, 1), torch.stack(alphas, 1)  # (B, L, vocab_size), (B, L, S)


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
    long-range runs (``attn.book.results.measured("long_range")["runs"]``)."""
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
