"""What only the applications chapter (``book/applications.ipynb``) computes and measures.

Two things the chapter runs where a small model can show them:

- **compression of the book's GPT** (``attn.book.pretraining.load("gpt")``): post-training symmetric
  per-channel integer quantisation of the weights of its linear layers (:func:`quantize`,
  :func:`dequantize`, :func:`quantized`), magnitude pruning (:func:`pruned`), each scored by the
  validation loss it costs (:func:`validation_loss`) and the bytes it saves (:func:`weight_bytes`);
- **a forecasting toy** where attention does the work (:func:`seasonal_series`,
  :class:`Forecaster`, :func:`forecast_run`): every series repeats a random season of ``period``
  steps under noise; a one-layer causal Transformer predicts the next value, and the share of its
  attention on the past steps in the same phase of the season is measured. ``scripts/applications.py``
  trains it from several seeds and stores the results the chapter reads.
"""

from __future__ import annotations

import copy

import torch
import torch.nn.functional as F
from torch import nn

import attn
from attn import _checks

__all__ = ["Forecaster", "dequantize", "forecast_run", "linear_layers", "phase_share", "pruned", "quantize",
           "quantized", "seasonal_baselines", "seasonal_series", "validation_loss", "weight_bytes"]


# --- compression ------------------------------------------------------------------------------

def quantize(w: torch.Tensor, bits: int = 8) -> tuple[torch.Tensor, torch.Tensor]:
    r"""Symmetric per-channel quantisation of a weight matrix to ``bits``-bit integers.

    Each output channel (row) ``i`` gets its own scale :math:`s_i = \max_j |w_{ij}| / q_{max}` with
    :math:`q_{max} = 2^{bits-1} - 1` (127 for int8), and :math:`q_{ij} = \mathrm{round}(w_{ij} / s_i)`,
    an integer in :math:`[-q_{max}, q_{max}]`. Rounding moves each weight by at most half a step:
    :math:`|w_{ij} - s_i q_{ij}| \le s_i / 2`. A row of zeros gets the scale 1 (and stays zero).

    Args:
        w: a floating-point weight, ``(out, in)``.
        bits: integer width, 2 to 8.

    Returns:
        ``(q, scale)``: ``q`` int8 ``(out, in)`` (int8 holds every width up to 8), ``scale`` float32 ``(out, 1)``.
    """
    _checks.tensor("w", w, min_dim=2)
    _checks.floating("w", w)
    if w.dim() != 2:
        raise ValueError(f"w must be a matrix (out, in), got shape {_checks.fmt(w.shape)}")
    _checks.integer("bits", bits, 2, 8)
    qmax = 2 ** (bits - 1) - 1
    amax = w.detach().abs().amax(dim=1, keepdim=True).float()  # (out, 1)
    scale = torch.where(amax > 0, amax / qmax, torch.ones_like(amax))  # (out, 1)
    q = torch.round(w.detach().float() / scale).clamp(-qmax, qmax)  # (out, in)
    return q.to(torch.int8), scale


def dequantize(q: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    """``q * scale``, float32 ``(out, in)``: the weight the quantised model computes with."""
    return q.float() * scale


def linear_layers(model: nn.Module) -> dict[str, nn.Linear]:
    """The ``nn.Linear`` layers of ``model`` by name, leaving out a layer whose weight is an
    embedding's (GPT's output layer is tied to its token embedding :math:`W_E`)."""
    embedded = {id(m.weight) for m in model.modules() if isinstance(m, nn.Embedding)}
    return {name: m for name, m in model.named_modules() if isinstance(m, nn.Linear) and id(m.weight) not in embedded}


def quantized(model: nn.Module, bits: int = 8) -> nn.Module:
    """A copy of ``model`` whose linear layers (:func:`linear_layers`) compute with their weights
    quantised to ``bits`` bits and back (biases, embeddings and norms stay float32)."""
    _checks.integer("bits", bits, 2, 8)
    out = copy.deepcopy(model)
    with torch.no_grad():
        for layer in linear_layers(out).values():
            layer.weight.copy_(dequantize(*quantize(layer.weight, bits)))
    return out


def pruned(model: nn.Module, sparsity: float) -> nn.Module:
    """A copy of ``model`` with the fraction ``sparsity`` of smallest-magnitude weights of each
    linear layer (:func:`linear_layers`) set to zero: exactly ``int(sparsity * n)`` of its ``n``."""
    _checks.number("sparsity", sparsity, 0, 1, bounds="[)")
    out = copy.deepcopy(model)
    with torch.no_grad():
        for layer in linear_layers(out).values():
            w = layer.weight
            k = int(sparsity * w.numel())
            smallest = w.abs().flatten().argsort(stable=True)[:k]  # ties: the earlier entry goes first
            w.view(-1)[smallest] = 0.0
    return out


def weight_bytes(model: nn.Module, bits: int | None = None) -> int:
    """Bytes of the linear layers' weights: float32 (``bits=None``), or ``bits`` per weight plus
    one float32 scale per output channel."""
    layers = linear_layers(model).values()
    if bits is None:
        return sum(4 * m.weight.numel() for m in layers)
    _checks.integer("bits", bits, 2, 8)
    return sum(m.weight.numel() * bits // 8 + 4 * m.weight.shape[0] for m in layers)


def validation_loss(model: nn.Module, ids: torch.Tensor, length: int) -> float:
    """Mean next-token cross-entropy (nats) of a token model over ``ids`` ``(N,)`` cut into
    non-overlapping windows of ``length`` (as the model-variants chapter scores its GPT)."""
    _checks.positive_int("length", length)
    n = (len(ids) - 1) // length
    if n < 1:
        raise ValueError(f"ids must hold more than length={length} tokens, got {len(ids)}")
    xs = ids[: n * length].reshape(n, length)  # (N, L)
    ys = ids[1 : n * length + 1].reshape(n, length)  # (N, L)
    with torch.no_grad():
        logits = model(xs)  # (N, L, |V|)
    return F.cross_entropy(logits.flatten(0, 1), ys.flatten()).item()


# --- forecasting toy --------------------------------------------------------------------------

def seasonal_series(batch: int, length: int, period: int, *, noise: float = 0.3, seed: int = 0) -> torch.Tensor:
    """``batch`` series of ``length`` steps, ``(B, length)``: each repeats its own random season
    (``period`` values drawn from N(0, 1), started at a random phase) plus noise drawn from N(0, ``noise ** 2``)."""
    _checks.positive_int("batch", batch)
    _checks.positive_int("length", length)
    _checks.integer("period", period, 2, length, high_name="length")
    _checks.number("noise", noise, 0)
    g = torch.Generator().manual_seed(seed)
    season = torch.randn(batch, period, generator=g)  # (B, P)
    phase = torch.randint(0, period, (batch, 1), generator=g)  # (B, 1)
    t = (torch.arange(length) + phase) % period  # (B, length)
    return season.gather(1, t) + noise * torch.randn(batch, length, generator=g)


def seasonal_baselines(x: torch.Tensor, period: int) -> dict[str, torch.Tensor]:
    """Predictions of the last value of each series ``x`` ``(B, L)`` from the others: the value one
    period back ("seasonal naive") and the mean of all earlier values in the same phase ("seasonal
    mean"). Each ``(B,)``."""
    L = x.shape[1]
    same = x[:, torch.arange(L - 1 - period, -1, -period)]  # (B, k): one, two, ... periods back
    return {"seasonal naive": same[:, 0], "seasonal mean": same.mean(1)}


class Forecaster(nn.Module):
    """A one-layer causal Transformer that reads a series and predicts each next value.

    A value becomes a vector by a linear map; a learned table adds the position; one pre-LN
    encoder layer with causal self-attention mixes the past; a linear map reads the prediction.

    Shape: ``x`` ``(B, L)`` -> ``(B, L)``: output ``t`` predicts ``x[:, t + 1]``.
    """

    def __init__(self, d_model: int = 32, num_heads: int = 1, max_len: int = 64):
        super().__init__()
        self.inp = nn.Linear(1, d_model)
        self.pos = attn.positional.LearnedPositionalEncoding(d_model, max_len)
        self.layer = attn.blocks.EncoderLayer(d_model, num_heads, 2 * d_model, dropout=0.0, norm_first=True)
        self.norm = nn.LayerNorm(d_model)
        self.out = nn.Linear(d_model, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.pos(self.inp(x[..., None]))  # (B, L, D)
        h = self.layer(h, is_causal=True)  # (B, L, D)
        return self.out(self.norm(h))[..., 0]  # (B, L)


def phase_share(weights: torch.Tensor, period: int) -> float:
    """Share of the last query's attention ``weights`` ``(B, H, L, L)`` on the keys in the same
    phase as the value it predicts (``period``, ``2 * period``, ... steps before that value)."""
    L = weights.shape[-1]
    same = torch.arange(L - period, -1, -period)  # keys L - P, L - 2P, ...: same phase as step L
    return weights[..., -1, same].sum(-1).mean().item()


def forecast_run(seed: int, *, period: int = 8, length: int = 33, noise: float = 0.3, steps: int = 1000,
                 batch: int = 64, d_model: int = 32, lr: float = 3e-3, test: int = 2000) -> dict:
    """Train a :class:`Forecaster` from ``seed`` on fresh series each step (MSE on every next value)
    and score the last value of ``test`` held-out series. Returns the test MSE of the model and the
    baselines (:func:`seasonal_baselines`, "last value"), the share of the last query's attention
    on same-phase keys (:func:`phase_share`) with the share a uniform causal row would give, that
    attention by how many steps before the predicted value each key lies (``by_lag[k - 1]`` for
    ``k`` steps back, averaged over the test series), and the loss curve."""
    torch.manual_seed(seed)
    model = Forecaster(d_model, max_len=length)

    def data(step):
        return seasonal_series(batch, length, period, noise=noise, seed=seed * 10**6 + step)

    def loss(m, x):
        return F.mse_loss(m(x[:, :-1]), x[:, 1:])

    curve = attn.book.train.train(model, data, loss, steps=steps, lr=lr, warmup=30, seed=seed, progress=False)
    x = seasonal_series(test, length, period, noise=noise, seed=10**9 + seed)  # (N, length): held out
    model.eval()
    with torch.no_grad(), attn.record_attention(model) as rec:
        pred = model(x[:, :-1])[:, -1]  # (N,): the last value
    target = x[:, -1]
    mse = {"Transformer": F.mse_loss(pred, target).item()}
    for name, p in seasonal_baselines(x, period).items():
        mse[name] = F.mse_loss(p, target).item()
    mse["last value"] = F.mse_loss(x[:, -2], target).item()
    L, w = length - 1, rec["layer.self_attn"]  # w: (N, H, L, L)
    by_lag = w[..., -1, :].mean((0, 1)).flip(0)  # (L,): key L - 1 is 1 step before the value, key 0 is L
    return {"seed": seed, "mse": mse, "phase_share": phase_share(w, period),
            "uniform_share": len(range(L - period, -1, -period)) / L, "by_lag": by_lag.tolist(), "curve": curve}
