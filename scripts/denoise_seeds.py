"""BART's text infilling against T5's span corruption over three training seeds: the spread that the
model-variants chapter's one checkpoint per model cannot show.

    PYTHONPATH=src nice -n 5 python -m scripts.denoise_seeds   # writes benchmarks/measured/denoise_seeds.json

Seed 0 of each is the checkpoint the chapter loads (``attn.book.pretraining.load``); seeds 1 and 2 are
trained here with the same recipes (``RECIPES["bart"]``, ``RECIPES["t5_spans"]``, one thread each, side
by side) and rounded to float16 as the checkpoints are. Every model is scored as the chapter scores
them: the same held-out windows, the same hidden spans at 15% and 30%, each model given them in its
own format, teacher-forced, accuracy on the hidden characters only.
"""

from __future__ import annotations

import dataclasses
import sys
import time

import torch

from attn.book import pretraining, results, train

NAMES = ("bart", "t5_spans")
SEEDS = (0, 1, 2)
RATES = (pretraining.T5_RATE, pretraining.BART_RATE)
WINDOWS, SPAN_SEED = 400, 2  # the chapter's held-out windows (seed 1) and spans (seed 2)
OUT = "denoise_seeds"


@torch.no_grad()
def hidden_accuracy(model, name: str, x: torch.Tensor, hidden: torch.Tensor, mask_id: int) -> float:
    """Teacher-forced accuracy of ``model`` (recipe ``name``) on the hidden characters of ``x`` ``(B, L)``."""
    if name == "bart":
        src, tgt_in, _, _ = pretraining.text_infilling(x, mask_id, hidden=hidden)
        pred = model(src, tgt_in, src != pretraining.CharVocab.PAD)[:, :-1].argmax(-1)  # (B, L)
        return (pred[hidden] == x[hidden]).float().mean().item()
    src, tgt_in, tgt_out, scored = pretraining.span_corruption(x, mask_id, hidden=hidden)
    pred = model(src, tgt_in, src != pretraining.CharVocab.PAD).argmax(-1)  # (B, T)
    return (pred[scored] == tgt_out[scored]).float().mean().item()


def score(model, name: str) -> dict[str, float]:
    """Accuracy on the hidden characters of the chapter's held-out windows, at each rate."""
    vocab, _, val_ids = pretraining.text_corpus()
    x = pretraining.windows(val_ids, WINDOWS, 64, seed=1)
    out = {}
    for rate in RATES:
        hidden = pretraining.noise_spans(x.shape, rate, generator=torch.Generator().manual_seed(SPAN_SEED))
        out[f"{rate:.2f}"] = round(hidden_accuracy(model, name, x, hidden, len(vocab)), 6)
    return out


def run(setting: tuple[str, int], steps: int | None = None) -> dict:
    """One model: the stored checkpoint for seed 0, else trained (``steps``: fewer, for tests)."""
    name, seed = setting
    start = time.process_time()
    if seed == 0 and steps is None:
        model, log = pretraining.load(name)
    else:
        model, log = pretraining.train_recipe(name, seed, steps=steps)
        model = model.half().float().eval()  # as stored: float16 weights
    return {"name": name, "seed": seed, "accuracy": score(model, name), "final_loss": log["losses"][-1],
            "train_cpu_seconds": log["seconds"], "cpu_seconds": round(time.process_time() - start, 2)}


def main(argv: list[str]) -> None:
    """``python -m scripts.denoise_seeds [OUT.json]`` (default: the file the chapter reads)."""
    runs = train.run_side_by_side(run, [(n, s) for n in NAMES for s in SEEDS])
    meta = dict(names=list(NAMES), seeds=list(SEEDS), rates=list(RATES), windows=WINDOWS, span_seed=SPAN_SEED,
                recipes={n: dataclasses.asdict(pretraining.RECIPES[n]) for n in NAMES},
                threads=1, torch=torch.__version__, command="PYTHONPATH=src python -m scripts.denoise_seeds")
    results.write(argv[0] if argv else OUT, dict(meta=meta, runs=runs))


if __name__ == "__main__":
    main(sys.argv[1:])
