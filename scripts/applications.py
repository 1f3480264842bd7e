"""The applications chapter's forecasting toy: a one-layer causal Transformer
(``attn.book.applications.Forecaster``) learns to predict the next value of noisy seasonal series,
trained from several seeds (``attn.book.applications.forecast_run``), each scored against the
seasonal baselines and measured for where its attention looks. Five runs take longer than a
chapter may, so this script stores what ``book/applications.ipynb`` reads.

    PYTHONPATH=src nice -n 5 python -m scripts.applications   # writes benchmarks/measured/applications.json
"""

from __future__ import annotations

import sys
import time

import torch

from attn.book import applications, results, train

SEEDS = (0, 1, 2, 3, 4)
STEPS = (1000, 3000)  # the chapter's runs, and three times longer: does more training make it average?
SETTING = dict(period=8, length=33, noise=0.3, batch=64, d_model=32, lr=3e-3, test=2000)
OUT = "applications"  # benchmarks/measured/applications.json, shipped by setup.py (attn.book.results)
COMMAND = "PYTHONPATH=src nice -n 5 python -m scripts.applications"


def run(item: tuple[int, int], setting: dict | None = None) -> dict:
    """One training run ``(steps, seed)`` (``setting`` overrides :data:`SETTING`), with its processor
    time; numbers rounded to 6 decimals, the loss curve to every 10th step."""
    steps, seed = item
    start = time.process_time()
    r = applications.forecast_run(seed, steps=steps, **{**SETTING, **(setting or {})})
    return {"steps": steps, "seed": seed, "mse": {k: round(v, 6) for k, v in r["mse"].items()},
            "phase_share": round(r["phase_share"], 6), "uniform_share": round(r["uniform_share"], 6),
            "by_lag": [round(x, 6) for x in r["by_lag"]], "curve": [round(x, 6) for x in r["curve"][::10]],
            "train_cpu_seconds": round(time.process_time() - start, 2)}


def main(argv: list[str]) -> None:
    """``python -m scripts.applications [OUT.json]`` (default: the file the chapter reads)."""
    out = argv[0] if argv else OUT
    runs = train.run_side_by_side(run, [(n, s) for n in STEPS for s in SEEDS])  # one thread each
    meta = dict(seeds=list(SEEDS), steps=list(STEPS), **SETTING, threads=1, torch=torch.__version__, command=COMMAND,
                cpu_seconds=round(sum(r["train_cpu_seconds"] for r in runs), 1))
    results.write(out, dict(meta=meta, runs=runs))


if __name__ == "__main__":
    main(sys.argv[1:])
