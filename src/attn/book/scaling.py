"""Scaling, measured small: language models of several sizes trained on several data budgets, and a
power law fitted to their validation losses (``scripts/scaling.py`` trains them; ``book/applications.ipynb``
reads the stored results).

- :func:`non_embedding_params`: the parameter count ``N`` as Kaplan et al. (2020) count it,
  ``2 d_model n_layer (2 d_attn + d_ff)`` (``12 n_layer d_model**2`` for ``d_ff = 4 d_model``):
  the weight matrices of the layers, without embeddings, biases or LayerNorms;
- :func:`flops`: the training compute ``6 N D`` of ``N`` parameters over ``D`` tokens;
- :func:`run`: one decoder-only character model (:class:`attn.variants.GPT`) trained on the
  book's English corpus (:func:`attn.book.pretraining.text_corpus`, its windows and its loss) and
  scored on the fixed held-out validation text;
- :func:`fit_power_law`: ``L = (x_c / x) ** alpha`` by least squares in log space, with the
  standard error of ``alpha``; :func:`bootstrap_alpha` resamples the seeds instead, and
  :func:`alpha_without_each` refits with each size left out.
"""

from __future__ import annotations

import time

import numpy as np
import torch
import torch.nn.functional as F

from attn import _checks
from attn.book import pretraining
from attn.book import train as _train
from attn.variants import GPT

__all__ = ["KAPLAN", "alpha_without_each", "bootstrap_alpha", "fit_power_law", "flops", "non_embedding_params", "run",
           "validation_loss"]

#: The power laws of Kaplan et al. (2020, equations 1.1 and 1.2). ``L(N) = (N_c / N) ** alpha_N`` (non-embedding
#: parameters, models trained to convergence) and ``L(D) = (D_c / D) ** alpha_D`` (tokens, large
#: models stopped early); losses in nats per token of their byte-pair vocabulary.
KAPLAN = dict(alpha_N=0.076, N_c=8.8e13, alpha_D=0.095, D_c=5.4e13)

CONTEXT = 32  # characters a model reads at once
BATCH = 16  # windows per step: CONTEXT * BATCH tokens a step
HEAD_DIM = 8  # every size uses heads of width 8 (num_heads = d_model / 8)


def non_embedding_params(d_model: int, num_layers: int, d_ff: int | None = None) -> int:
    """Kaplan et al.'s ``N = 2 d_model n_layer (2 d_attn + d_ff)`` with ``d_attn = d_model``: per layer
    the four attention projections (``4 d_model**2``) and the two feed-forward matrices
    (``2 d_model d_ff``); embeddings (tokens and positions), biases and LayerNorms are not counted.
    ``d_ff`` defaults to ``4 d_model``, which makes ``N = 12 n_layer d_model**2``."""
    _checks.positive_int("d_model", d_model)
    _checks.positive_int("num_layers", num_layers)
    d_ff = 4 * d_model if d_ff is None else d_ff
    _checks.positive_int("d_ff", d_ff)
    return 2 * d_model * num_layers * (2 * d_model + d_ff)


def flops(n_params: float, tokens: float) -> float:
    """Training compute ``6 N D``: about 2 N multiply-adds a token forward, twice that backward."""
    return 6.0 * _checks.positive_number("n_params", n_params) * _checks.positive_number("tokens", tokens)


def validation_loss(model: GPT, val_ids: torch.Tensor, length: int = CONTEXT) -> float:
    """Mean next-character loss (nats) over the whole validation text, cut into consecutive windows
    of ``length + 1`` characters: the same, fixed held-out set for every model.

    Shape: ``val_ids`` ``(M,)``."""
    n = (len(val_ids) - 1) // length
    x = val_ids[: n * length + 1]
    inputs = x[:-1].reshape(n, length)  # (n, length)
    targets = x[1:].reshape(n, length)  # (n, length)
    with torch.no_grad():
        logits = model.eval()(inputs)  # (n, length, V)
    return F.cross_entropy(logits.flatten(0, 1), targets.flatten()).item()


def run(d_model: int, num_layers: int, steps: int, seed: int, *, lr: float = 3e-3) -> dict:
    """Train one GPT of width ``d_model`` and ``num_layers`` layers for ``steps`` steps of ``BATCH``
    windows of ``CONTEXT`` characters (the model-variants GPT's windows and loss), seeded; returns
    its sizes, the tokens it read, its validation loss and the processor seconds it took."""
    _checks.positive_int("steps", steps)
    start = time.process_time()
    vocab, train_ids, val_ids = pretraining.text_corpus()
    torch.manual_seed(seed)
    model = GPT(len(vocab), d_model, num_heads=max(1, d_model // HEAD_DIM), num_layers=num_layers,
                max_len=CONTEXT)

    def batch(step: int) -> torch.Tensor:
        return pretraining.windows(train_ids, BATCH, CONTEXT + 1, seed=seed * 10**6 + step)  # (BATCH, CONTEXT + 1)

    def loss(m, x):
        return F.cross_entropy(m(x[:, :-1]).flatten(0, 1), x[:, 1:].flatten())

    losses = _train.train(model, batch, loss, steps=steps, lr=lr, warmup=max(1, steps // 10), seed=seed,
                          progress=False)
    return dict(d_model=d_model, layers=num_layers, steps=steps, seed=seed,
                N=non_embedding_params(d_model, num_layers), params=sum(p.numel() for p in model.parameters()),
                tokens=steps * BATCH * CONTEXT, train_loss=round(float(np.mean(losses[-10:])), 6),
                val_loss=round(validation_loss(model, val_ids), 6),
                cpu_seconds=round(time.process_time() - start, 2))


def fit_power_law(x, loss) -> dict[str, float]:
    """Fit ``loss = (x_c / x) ** alpha`` by least squares on ``log loss = alpha log x_c - alpha log x``
    (no irreducible term). Returns ``alpha``, its standard error ``alpha_se`` (from the residuals,
    ``n - 2`` degrees of freedom), ``x_c`` and ``r2`` of the log-log line.

    Shape: ``x`` and ``loss`` ``(n,)``, positive, ``n >= 3``."""
    x, y = np.asarray(x, dtype=float), np.asarray(loss, dtype=float)
    if x.shape != y.shape or x.ndim != 1 or len(x) < 3:
        raise ValueError(f"x and loss must be 1-D of the same length >= 3, got shapes {x.shape} and {y.shape}")
    for name, values in (("x", x), ("loss", y)):  # the fit is in log space
        for v in values.tolist():
            _checks.positive_number(name, v, " (the fit is in log space)")
    lx, ly = np.log(x), np.log(y)
    X = np.stack([np.ones_like(lx), lx], axis=1)  # (n, 2)
    coef, *_ = np.linalg.lstsq(X, ly, rcond=None)
    resid = ly - X @ coef
    s2 = float(resid @ resid) / (len(x) - 2)
    cov = s2 * np.linalg.inv(X.T @ X)
    alpha = -float(coef[1])
    return dict(alpha=alpha, alpha_se=float(np.sqrt(cov[1, 1])), x_c=float(np.exp(coef[0] / alpha)),
                r2=1.0 - float(resid @ resid) / float(((ly - ly.mean()) ** 2).sum()))


def bootstrap_alpha(x, loss, groups, *, samples: int = 2000, seed: int = 0) -> tuple[float, float]:
    """A 95% interval for ``alpha`` from resampling seeds: each resample draws, for every ``x``,
    as many runs as it has with replacement from its own runs (``groups`` says which runs share
    an ``x``), and refits. Returns the 2.5% and 97.5% quantiles.

    Shape: ``x``, ``loss`` and ``groups`` ``(n,)``."""
    _checks.positive_int("samples", samples)
    x, y, g = np.asarray(x, dtype=float), np.asarray(loss, dtype=float), np.asarray(groups)
    rng = np.random.default_rng(seed)
    members = [np.flatnonzero(g == k) for k in np.unique(g)]
    alphas = []
    for _ in range(samples):
        idx = np.concatenate([rng.choice(m, size=len(m)) for m in members])
        alphas.append(fit_power_law(x[idx], y[idx])["alpha"])
    lo, hi = np.quantile(alphas, [0.025, 0.975])
    return float(lo), float(hi)


def alpha_without_each(x, loss) -> list[float]:
    """``alpha`` fitted with each distinct ``x`` (all its runs) left out, in increasing ``x``: how much
    the exponent depends on which sizes were trained, beyond the noise between seeds.

    Shape: ``x`` and ``loss`` ``(n,)``, with at least three points left after each removal."""
    x, y = np.asarray(x, dtype=float), np.asarray(loss, dtype=float)
    return [fit_power_law(x[x != v], y[x != v])["alpha"] for v in np.unique(x)]
