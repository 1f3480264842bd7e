"""Scaling, measured small: decoder-only character models (``attn.variants.GPT``) of six sizes, each
from three seeds, read the same number of tokens of the book's English corpus; one size also reads
four other token budgets. Each run is scored on the same held-out validation text
(``attn.book.scaling.run``). Writes the results ``book/applications.ipynb`` reads: about thirty
training runs take minutes of processor time, more than a chapter may.

    PYTHONPATH=src nice -n 5 python -m scripts.scaling     # writes benchmarks/measured/scaling.json
"""

from __future__ import annotations

import sys
import time

import torch

import attn
from attn.book import results, scaling

SIZES = ((16, 1), (32, 1), (32, 2), (48, 2), (64, 3), (96, 3))  # (d_model, layers): N from 3k to 332k
SEEDS = (0, 1, 2)
STEPS = 600  # the size sweep's token budget: STEPS * BATCH * CONTEXT tokens
DATA_SIZE = (48, 2)  # the data sweep's model
DATA_STEPS = (75, 150, 300, 600, 1200)  # its token budgets (600 is the size sweep's run)
LR = 3e-3
OUT = "scaling"  # benchmarks/measured/scaling.json, shipped by setup.py (attn.book.results)


def settings(sizes=SIZES, seeds=SEEDS, steps=STEPS, data_size=DATA_SIZE, data_steps=DATA_STEPS) -> list[tuple]:
    """Every ``(d_model, layers, steps, seed)`` to train, each once: the size sweep, then the data
    sweep's runs that the size sweep does not already hold."""
    runs = [(d, n, steps, s) for d, n in sizes for s in seeds]
    runs += [(*data_size, t, s) for t in data_steps for s in seeds if (*data_size, t, s) not in runs]
    return runs


def one(setting: tuple[int, int, int, int]) -> dict:
    """One run, ``(d_model, layers, steps, seed)``."""
    d, n, steps, seed = setting
    return scaling.run(d, n, steps, seed, lr=LR)


def main(argv: list[str]) -> None:
    """``python -m scripts.scaling [OUT.json]`` (default: the file the chapter reads)."""
    out = argv[0] if argv else OUT
    start = time.time()
    runs = attn.book.train.run_side_by_side(one, settings())  # one thread each
    meta = dict(sizes=[list(s) for s in SIZES], seeds=list(SEEDS), steps=STEPS, data_size=list(DATA_SIZE),
                data_steps=list(DATA_STEPS), batch=scaling.BATCH, context=scaling.CONTEXT,
                head_dim=scaling.HEAD_DIM, lr=LR, warmup="steps // 10", schedule="cosine", threads=1,
                corpus="attn.book.pretraining.text_corpus(): 90% train, 10% validation (characters)",
                torch=torch.__version__, command="PYTHONPATH=src nice -n 5 python -m scripts.scaling",
                cpu_seconds=round(sum(r["cpu_seconds"] for r in runs), 1), wall_seconds=round(time.time() - start, 1))
    results.write(out, dict(meta=meta, runs=runs))


if __name__ == "__main__":
    main(sys.argv[1:])
