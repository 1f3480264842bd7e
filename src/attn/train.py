"""A small training loop shared by the chapters' experiments."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable

import torch
from torch import nn

__all__ = ["quiet", "run_side_by_side", "train"]


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
    import multiprocessing

    items = list(items)
    workers = min(len(items), workers or os.cpu_count() or 1)
    if workers <= 1 or "fork" not in multiprocessing.get_all_start_methods():
        return [fn(item) for item in items]
    with multiprocessing.get_context("fork").Pool(workers, initializer=_one_thread) as pool:
        return pool.map(fn, items, chunksize=1)
