"""Pre-train, then fine-tune, measured: does masked-LM pre-training help a small BERT learn a
labelled task from few labels?

The labelled task is generated from the book's English text (:func:`attn.book.pretraining.text_corpus`):
a window of :data:`LENGTH` characters is either real text (label 1) or the same window with the
letters of every word shuffled (label 0). Both classes have the same characters, so counting them
does not help; telling them apart needs knowing which letters follow which in English, the kind
of knowledge masked-LM pre-training can store.

- :func:`scramble` and :func:`real_or_scrambled`: the task, seeded;
- :class:`Classifier`: a BERT encoder, its states averaged over the positions, then a linear layer;
- :func:`pretrain`: masked-LM pre-training of the encoder on the training text;
- :func:`finetune`: train a classifier on a budget of labelled windows, score it on held-out ones;
- :func:`pair_baseline`: logistic regression on counts of adjacent character pairs, the same labels.

``scripts/finetune.py`` runs both at several label budgets and seeds and stores the accuracies
(``attn.book.results.measured("finetune")``); the model-variants chapter shows them.
"""

from __future__ import annotations

import random
import re

import torch
import torch.nn.functional as F
from torch import nn

from attn import _checks
from attn.book import train as _train
from attn.book.pretraining import mlm_mask, text_corpus, windows
from attn.variants import BERT

__all__ = ["LENGTH", "SIZES", "Classifier", "encoder", "finetune", "pair_baseline", "pretrain", "real_or_scrambled", "scramble"]

LENGTH = 32  # characters per window
SIZES = dict(d_model=64, num_heads=4, num_layers=2)  # the encoder: as the chapter's BERT

_WORD = re.compile(r"[a-z]+")


def scramble(text: str, rng: random.Random) -> str:
    """``text`` with the letters inside every word (a run of ``a``-``z``) shuffled; spaces, digits
    and punctuation stay where they are. ``rng`` draws the shuffles."""

    def shuffled(m: re.Match) -> str:
        letters = list(m.group())
        rng.shuffle(letters)
        return "".join(letters)

    return _WORD.sub(shuffled, text)


def real_or_scrambled(text: str, n: int, *, length: int = LENGTH, seed: int = 0) -> tuple[list[str], list[int]]:
    """``n`` labelled windows of ``text``: ``(windows, labels)``, label 1 for a real window of
    ``length`` characters, 0 for a window whose words were scrambled (:func:`scramble`, drawn
    again until it differs from the real one). Each label is a fair coin; seeded, so the same
    arguments give the same windows."""
    _checks.positive_int("n", n)
    _checks.positive_int("length", length)
    if len(text) <= length:
        raise ValueError(f"text must be longer than length={length}, got {len(text)} characters")
    rng = random.Random(seed)
    xs, ys = [], []
    while len(xs) < n:
        start = rng.randrange(len(text) - length)
        window = text[start : start + length]
        real = rng.random() < 0.5
        if not real:
            fake = scramble(window, rng)
            if fake == window:  # nothing to shuffle (e.g. only one-letter words): draw another window
                continue
            window = fake
        xs.append(window)
        ys.append(int(real))
    return xs, ys


class Classifier(nn.Module):
    """A BERT encoder, its states averaged over the positions, then a linear layer to ``classes``
    logits. (Our BERT has no ``[CLS]`` token: the mean of the states plays its part.)

    Shape: ``tokens`` ``(B, L)`` -> logits ``(B, classes)``.
    """

    def __init__(self, encoder: BERT, classes: int = 2):
        super().__init__()
        self.encoder = encoder
        self.head = nn.Linear(encoder.d_model, classes)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        h = self.encoder.encode(tokens)  # (B, L, D)
        return self.head(h.mean(1))  # (B, classes)


def encoder(seed: int = 0) -> BERT:
    """An untrained encoder of :data:`SIZES` for the corpus's characters plus ``[MASK]``, seeded."""
    torch.manual_seed(seed)
    return BERT(len(text_corpus()[0]) + 1, **SIZES, max_len=LENGTH)


def pretrain(steps: int, *, seed: int = 0, batch: int = 32, lr: float = 3e-3, warmup: int = 100):
    """Masked-LM pre-training (:func:`attn.book.pretraining.mlm_mask`) of :func:`encoder` on windows of
    the training text. Returns ``(encoder, losses)``."""
    vocab, train_ids, _ = text_corpus()
    mask_id = len(vocab)
    model = encoder(seed)

    def batch_at(step: int):
        x = windows(train_ids, batch, LENGTH, seed=seed * 10**6 + step)  # (batch, LENGTH)
        return mlm_mask(x, mask_id, len(vocab), generator=torch.Generator().manual_seed(seed * 10**6 + step + 1))

    def loss(m, b):
        inputs, targets = b
        return F.cross_entropy(m(inputs).flatten(0, 1), targets.flatten())  # IGNORE (-100) skipped

    losses = _train.train(model, batch_at, loss, steps=steps, lr=lr, warmup=warmup, seed=seed, progress=False)
    return model, losses


def _labelled(budget: int, seed: int, test: int):
    """Encoded ``(x, y, xt, yt)``: ``budget`` windows of the training text (drawn with ``seed``) and
    ``test`` windows of the validation text (always the same)."""
    vocab, train_ids, val_ids = text_corpus()
    texts, labels = real_or_scrambled(vocab.decode(train_ids), budget, seed=1000 + seed)
    held_texts, held_labels = real_or_scrambled(vocab.decode(val_ids), test, seed=10**6)
    x = torch.tensor([vocab.encode(t) for t in texts])  # (budget, LENGTH)
    xt = torch.tensor([vocab.encode(t) for t in held_texts])  # (test, LENGTH)
    return x, torch.tensor(labels), xt, torch.tensor(held_labels)


def finetune(start: BERT | None, budget: int, *, seed: int = 0, steps: int = 300, lr: float = 1e-3,
             batch: int = 32, test: int = 1000) -> dict:
    """Fine-tune a :class:`Classifier` on ``budget`` labelled windows of the training text and score it
    on ``test`` windows of the validation text (text that pre-training never saw).

    ``start`` is a pre-trained encoder (copied, never changed) or ``None`` for one trained from
    scratch (:func:`encoder` with ``seed``); everything else is the same for both: the labelled
    windows (drawn with ``seed``), the head, the steps, the learning rate and the batches.
    Returns ``{"accuracy": ..., "losses": [...]}``.
    """
    _checks.positive_int("budget", budget)
    x, y, xt, yt = _labelled(budget, seed, test)
    enc = encoder(seed)
    if start is not None:
        enc.load_state_dict(start.state_dict())
    torch.manual_seed(seed)
    model = Classifier(enc)
    size = min(batch, budget)

    def batch_at(step: int):
        i = torch.randint(budget, (size,), generator=torch.Generator().manual_seed(seed * 10**6 + step))
        return x[i], y[i]

    losses = _train.train(model, batch_at, lambda m, b: F.cross_entropy(m(b[0]), b[1]), steps=steps, lr=lr,
                          warmup=steps // 10, seed=seed, progress=False)
    with torch.no_grad():
        accuracy = (model(xt).argmax(-1) == yt).float().mean().item()
    return {"accuracy": accuracy, "losses": losses}


def pair_baseline(budget: int, *, seed: int = 0, steps: int = 200, test: int = 1000) -> float:
    """Held-out accuracy of logistic regression on the counts of adjacent character pairs (a bag of
    bigrams), trained on the same ``budget`` labelled windows as :func:`finetune` with ``seed``
    (full-batch Adam, a small L2 penalty). It has no pre-training: it shows what the labels alone
    teach a model built for this task."""
    _checks.positive_int("budget", budget)
    x, y, xt, yt = _labelled(budget, seed, test)
    V = len(text_corpus()[0])

    def counts(ids: torch.Tensor) -> torch.Tensor:  # (N, L) -> (N, V * V)
        pairs = ids[:, :-1] * V + ids[:, 1:]  # (N, L - 1)
        return torch.zeros(len(ids), V * V).scatter_add_(1, pairs, torch.ones(pairs.shape))

    torch.manual_seed(seed)
    w = torch.zeros(V * V, 2, requires_grad=True)
    opt = torch.optim.Adam([w], lr=0.05)
    f = counts(x)
    for _ in range(steps):
        loss = F.cross_entropy(f @ w, y) + 1e-4 * w.pow(2).sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
    with torch.no_grad():
        return ((counts(xt) @ w).argmax(-1) == yt).float().mean().item()
