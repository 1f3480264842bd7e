"""Pre-train, then fine-tune, measured (the model-variants chapter's optional section): a small BERT
pre-trained with masked-LM on the book's English text, then fine-tuned to tell real text from
text whose words were scrambled (``attn.book.finetune``), against the same model trained from
scratch and a bag-of-character-pairs baseline, at several label budgets and seeds.

    PYTHONPATH=src nice -n 5 python -m scripts.finetune    # writes benchmarks/measured/finetune.json

One pre-training (seed 0, one thread, in this process), then every fine-tuning run side by side
(one thread each). About five minutes of processor time in all.
"""

from __future__ import annotations

import sys
import time

import torch

from attn.book import finetune, pretraining, results, train

BUDGETS = (32, 128, 512, 2048)  # labelled windows
SEEDS = (0, 1, 2)
PRETRAIN_STEPS = 4000
STEPS = 300  # fine-tuning steps, the same for every budget and start
LR = 1e-3
OUT = "finetune"  # benchmarks/measured/finetune.json, shipped by setup.py (attn.book.results)
COMMAND = "PYTHONPATH=src nice -n 5 python -m scripts.finetune"

_pretrained = None  # set by main() before the runs fork, so every worker shares it


def run(setting: tuple[str, int, int]) -> dict:
    """One run, ``(start, budget, seed)`` with ``start`` in ``"pretrained"``, ``"scratch"``,
    ``"pairs"`` (:func:`attn.book.finetune.pair_baseline`), and its processor time."""
    start, budget, seed = setting
    t0 = time.process_time()
    if start == "pairs":
        accuracy, final_loss = finetune.pair_baseline(budget, seed=seed), None
    else:
        r = finetune.finetune(_pretrained if start == "pretrained" else None, budget, seed=seed, steps=STEPS, lr=LR)
        tail = r["losses"][-25:]  # the mean training loss of the last 25 steps
        accuracy, final_loss = r["accuracy"], round(sum(tail) / len(tail), 4)
    return {"start": start, "budget": budget, "seed": seed, "accuracy": round(accuracy, 4),
            "final_loss": final_loss, "cpu_seconds": round(time.process_time() - t0, 2)}


def mlm_accuracy(model, *, n: int = 400) -> float:
    """Masked-character accuracy of ``model`` on ``n`` held-out windows (seeded, as in the chapter)."""
    vocab, _, val_ids = pretraining.text_corpus()
    x = pretraining.windows(val_ids, n, finetune.LENGTH, seed=1)
    inputs, targets = pretraining.mlm_mask(x, len(vocab), len(vocab), generator=torch.Generator().manual_seed(2))
    chosen = targets != -100
    with torch.no_grad():
        return (model(inputs).argmax(-1)[chosen] == targets[chosen]).float().mean().item()


def main(argv: list[str], *, pretrain_steps: int = PRETRAIN_STEPS, budgets=BUDGETS, seeds=SEEDS) -> dict:
    """``python -m scripts.finetune [OUT.json]`` (default: the file the chapter reads). The keyword
    arguments make a smaller run (the tests)."""
    global _pretrained
    out = argv[0] if argv else OUT
    torch.set_num_threads(1)
    t0 = time.process_time()
    _pretrained, losses = finetune.pretrain(pretrain_steps, seed=0)
    pretrain_seconds = round(time.process_time() - t0, 1)
    settings = [(s, b, seed) for s in ("pretrained", "scratch", "pairs") for b in budgets for seed in seeds]
    runs = train.run_side_by_side(run, settings)
    every = max(1, pretrain_steps // 40)
    meta = dict(
        budgets=list(budgets), seeds=list(seeds), starts=["pretrained", "scratch", "pairs"],
        length=finetune.LENGTH, sizes=finetune.SIZES, steps=STEPS, lr=LR, batch=32, test_windows=1000,
        pretrain=dict(steps=pretrain_steps, seed=0, batch=32, lr=3e-3, warmup=100, cpu_seconds=pretrain_seconds,
                      mlm_accuracy=round(mlm_accuracy(_pretrained), 4),
                      losses=[round(sum(losses[i : i + every]) / len(losses[i : i + every]), 4)
                              for i in range(0, pretrain_steps, every)], losses_every=every),
        threads=1, torch=torch.__version__, command=COMMAND,
        cpu_seconds=round(pretrain_seconds + sum(r["cpu_seconds"] for r in runs), 1))
    data = dict(meta=meta, runs=runs)
    results.write(out, data)
    return data


if __name__ == "__main__":
    main(sys.argv[1:])
