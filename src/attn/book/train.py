"""The chapters' training loop, its loss for token models, and a moving average to plot losses with.

- :func:`train`: AdamW with warm-up and cosine decay, a loss per step;
- :func:`token_loss`: cross-entropy of a token model over the positions that have a target;
- :func:`run_side_by_side`: independent runs spread over the CPU cores;
- :func:`smooth`: a trailing moving average of a loss curve.
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable, Iterable

import torch
import torch.nn.functional as F
from torch import nn

from attn import _checks

__all__ = ["quiet", "run_side_by_side", "smooth", "token_loss", "train"]


def quiet() -> bool:
    """Progress bars stay off in CI, under test runners and when ``ATTN_QUIET`` is set."""
    return bool(os.environ.get("CI") or os.environ.get("ATTN_QUIET") or os.environ.get("PYTEST_CURRENT_TEST"))


def train(
    model: nn.Module,
    batch: Callable[[int], tuple],
    loss_fn: Callable[[nn.Module, tuple], torch.Tensor],
    *,
    steps: int,
    lr: float = 3e-3,
    weight_decay: float = 0.0,
    warmup: int = 0,
    clip: float | None = 1.0,
    seed: int = 0,
    progress: bool | None = None,
) -> list[float]:
    """AdamW with linear warm-up then cosine decay. Returns the loss of every step.

    Args:
        batch: ``step -> batch`` (make it deterministic, e.g. seeded by the step).
        loss_fn: ``(model, batch) -> scalar loss``.
        progress: show a tqdm bar (default: unless :func:`quiet`).

    Shape: whatever ``model`` and ``loss_fn`` agree on; ``loss_fn`` returns a scalar ``()``.
    """
    torch.manual_seed(seed)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=weight_decay)

    def schedule(step: int) -> float:
        if step < warmup:
            return (step + 1) / warmup
        t = (step - warmup) / max(1, steps - warmup)
        return 0.5 * (1 + torch.cos(torch.tensor(t * torch.pi)).item())

    sched = torch.optim.lr_scheduler.LambdaLR(opt, schedule)
    show = (not quiet()) if progress is None else progress
    bar = None
    if show:
        from tqdm.auto import tqdm

        bar = tqdm(total=steps, desc="training", leave=False)
    losses = []
    model.train()
    for step in range(steps):
        loss = loss_fn(model, batch(step))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        if clip is not None:
            nn.utils.clip_grad_norm_(model.parameters(), clip)
        opt.step()
        sched.step()
        losses.append(loss.item())
        if bar is not None:
            bar.update(1)
            if step % 20 == 0:
                bar.set_postfix(loss=f"{losses[-1]:.3f}")
    if bar is not None:
        bar.close()
    model.eval()
    return losses


def _one_thread() -> None:
    torch.set_num_threads(1)


def run_side_by_side(fn: Callable, items: Iterable, *, workers: int | None = None) -> list:
    """``[fn(item) for item in items]``, with independent runs spread over the CPU cores.

    Small models use one core each, so two training runs side by side take the time of one. Each
    run must seed itself (as :func:`train` does): the results are then the same as the serial
    loop's, in the same order. Runs go to forked worker processes (one thread each) where the
    platform can fork (Linux, Colab); elsewhere, or with ``workers=1``, the loop is serial.
    ``fn`` must be a named function (a notebook's functions are fine) and return picklable values.

    Shape: whatever ``fn`` takes and returns; nothing is batched.
    """
    items = list(items)
    workers = min(len(items), workers or os.cpu_count() or 1)
    if workers <= 1 or "fork" not in multiprocessing.get_all_start_methods():
        return [fn(item) for item in items]
    with multiprocessing.get_context("fork").Pool(workers, initializer=_one_thread) as pool:
        return pool.map(fn, items, chunksize=1)


def token_loss(model, batch: tuple[torch.Tensor, ...], mask: torch.Tensor | None = None) -> torch.Tensor:
    """Mean cross-entropy of a token model on ``batch = (tokens, targets, ...)``, both ``(B, L)``,
    over the positions with a target (``attn.book.data.IGNORE``, -100, elsewhere); further items of the
    batch (e.g. :func:`attn.book.data.kv_recall`'s ``kind``) are not used. ``mask`` (e.g. a wrong one, to
    show what it does) replaces the model's own; ``None`` keeps it. The ``loss_fn`` for
    :func:`train`.

    Shape: ``tokens``, ``targets`` ``(B, L)`` -> a scalar."""
    tokens, targets = batch[0], batch[1]
    logits = model(tokens) if mask is None else model(tokens, mask=mask)  # (B, L, V)
    return F.cross_entropy(logits.flatten(0, 1), targets.flatten(), ignore_index=-100)


def smooth(xs, k: int = 25) -> list[float]:
    """Trailing moving average of ``xs`` over ``k`` values (fewer at the start)."""
    _checks.positive_int("k", k)
    xs = [float(x) for x in xs]
    return [sum(xs[max(0, i - k + 1) : i + 1]) / len(xs[max(0, i - k + 1) : i + 1]) for i in range(len(xs))]
