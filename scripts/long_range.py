"""Tiny LSTM vs tiny Transformer on a task whose answer lies far back, and on a control task whose
answer lies close, at several sequence lengths and seeds. Writes the results the chapter
``book/why_attention.ipynb`` reads (training all of them takes minutes, more than a chapter may).

    PYTHONPATH=src python -m scripts.long_range            # writes benchmarks/measured/long_range.json

Both tasks: a sequence of ``n`` random tokens; the model reads it all and predicts, at the last
position, one earlier token:

- ``far``: the *first* token (distance ``n - 1`` from the last position);
- ``near`` (control): the token three positions before the end (distance 3), whatever ``n``.
"""

from __future__ import annotations

import json
import sys

import torch
from torch import nn

import attn
from attn.book import results

VOCAB = 16
DISTANCE_NEAR = 3
LENGTHS = (8, 32, 128)
SEEDS = (0, 1, 2)
STEPS = 1000
BATCH = 32
LR = 3e-3
OUT = "long_range"  # benchmarks/measured/long_range.json, shipped by setup.py (attn.book.results)


def batch(task: str, n: int, size: int, *, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """``size`` sequences of length ``n`` and their targets: tokens ``(size, n)``, targets ``(size,)``."""
    if task not in ("far", "near"):
        raise ValueError(f"task must be 'far' or 'near', got {task!r}")
    if n <= DISTANCE_NEAR:
        raise ValueError(f"n must exceed the control distance {DISTANCE_NEAR}, got n={n}")
    g = torch.Generator().manual_seed(seed)
    tokens = torch.randint(0, VOCAB, (size, n), generator=g)  # (size, n)
    target = tokens[:, 0] if task == "far" else tokens[:, -1 - DISTANCE_NEAR]
    return tokens, target


def distance(task: str, n: int) -> int:
    """How far back from the last position the answer lies."""
    return n - 1 if task == "far" else DISTANCE_NEAR


class LSTMReader(nn.Module):
    """Embedding -> one LSTM layer -> linear head on the last hidden state."""

    def __init__(self, width: int = 48):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, width)
        self.rnn = nn.LSTM(width, width, batch_first=True)
        self.head = nn.Linear(width, VOCAB)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        h, _ = self.rnn(self.embed(tokens))  # (B, n, width)
        return self.head(h[:, -1])  # (B, VOCAB)


class TransformerReader(nn.Module):
    """:class:`attn.models.TokenModel` (sinusoidal positions, bidirectional) read at the last position."""

    def __init__(self, d_model: int = 32, num_layers: int = 2):
        super().__init__()
        self.net = attn.models.TokenModel(VOCAB, d_model, num_heads=2, num_layers=num_layers, d_ff=2 * d_model,
                                          max_len=max(LENGTHS))

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.net(tokens)[:, -1]  # (B, VOCAB)


MODELS = {"LSTM": LSTMReader, "Transformer": TransformerReader}


def parameters(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


def run(model_name: str, task: str, n: int, seed: int, *, steps: int = STEPS) -> dict:
    """Train one model from seed ``seed``; return its held-out accuracy and training time."""
    torch.manual_seed(seed)
    model = MODELS[model_name]()
    loss_fn = lambda m, b: nn.functional.cross_entropy(m(b[0]), b[1])  # noqa: E731
    with attn.measure.stopwatch() as wall, attn.measure.stopwatch("process") as cpu:
        losses = attn.book.train.train(model, lambda s: batch(task, n, BATCH, seed=10_000 * seed + s), loss_fn,
                                  steps=steps, lr=LR, warmup=steps // 10, seed=seed, progress=False)
    tokens, target = batch(task, n, 1000, seed=999_999)  # held out: seeds never used in training
    with torch.no_grad():
        acc = (model(tokens).argmax(-1) == target).float().mean().item()
    return dict(model=model_name, task=task, n=n, distance=distance(task, n), seed=seed, accuracy=round(acc, 4),
                final_loss=round(sum(losses[-20:]) / 20, 4), train_seconds=round(wall.seconds, 2),
                train_cpu_seconds=round(cpu.seconds, 2),
                parameters=parameters(model), chance=round(1 / VOCAB, 4))


def main(argv: list[str]) -> None:
    """``python -m scripts.long_range [OUT.json]`` (default: the file the chapter reads)."""
    out = argv[0] if argv else OUT
    torch.set_num_threads(1)
    rows = []
    for n in LENGTHS:
        for task in ("far", "near"):
            for name in MODELS:
                for seed in SEEDS:
                    rows.append(run(name, task, n, seed))
                    print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    meta = dict(steps=STEPS, batch=BATCH, lr=LR, vocab=VOCAB, threads=1, torch=torch.__version__,
                command="PYTHONPATH=src python -m scripts.long_range")
    results.write(out, dict(meta=meta, runs=rows))


if __name__ == "__main__":
    main(sys.argv[1:])
