"""The multi-head chapter's head-count sweep: one, two, four and eight heads at a fixed width
D = 64, each trained from several seeds on the key-value recall task with the chapter's recipe
(``attn.book.multi_head_attention.head_sweep_run``). Writes the results ``book/multi_head_attention.ipynb`` reads:
twenty training runs take minutes, more than a chapter may.

    PYTHONPATH=src python -m scripts.head_sweep            # writes benchmarks/measured/head_sweep.json
"""

from __future__ import annotations

import sys
import time

import torch

import attn
from attn.book import results

HEADS = (1, 2, 4, 8)
SEEDS = (0, 1, 2, 3, 4)
STEPS = 250
D_MODEL = 64
OUT = "head_sweep"  # benchmarks/measured/head_sweep.json, shipped by setup.py (attn.book.results)


def run(setting: tuple[int, int]) -> dict:
    """One run (``(num_heads, seed)``), with its processor time; losses rounded to 6 decimals."""
    num_heads, seed = setting
    start = time.process_time()
    r = attn.book.multi_head_attention.head_sweep_run(num_heads, seed, d_model=D_MODEL, steps=STEPS)
    return {"H": num_heads, "seed": seed, "acc": {str(k): round(v, 6) for k, v in r["acc"].items()},
            "loss": round(r["loss"], 6), "curve": [round(x, 6) for x in r["curve"]],
            "train_cpu_seconds": round(time.process_time() - start, 2)}


def main(argv: list[str]) -> None:
    """``python -m scripts.head_sweep [OUT.json]`` (default: the file the chapter reads)."""
    out = argv[0] if argv else OUT
    runs = attn.book.train.run_side_by_side(run, [(h, s) for h in HEADS for s in SEEDS])  # one thread each
    meta = dict(heads=list(HEADS), seeds=list(SEEDS), steps=STEPS, d_model=D_MODEL, batch=128, lr=3e-3,
                warmup=50, threads=1, torch=torch.__version__, command="PYTHONPATH=src python -m scripts.head_sweep")
    results.write(out, dict(meta=meta, runs=runs))


if __name__ == "__main__":
    main(sys.argv[1:])
