"""The induction-heads chapter's training runs: the two-layer attention-only model and the one-layer
control, five seeds each, with ``attn.book.induction_heads.train`` (one thread per run). Writes the
curves (losses and head scores every 5 steps up to step 600, then every 50), phase-change steps, final losses and head scores the
chapter shows, and saves the seed-0
models as the shipped checkpoints (float16, with a JSON card). Ten runs take minutes, more than a
chapter may.

    PYTHONPATH=src python -m scripts.induction_heads     # benchmarks/measured/induction_heads.json and
                                                         # src/attn/book/checkpoints/induction{,_1layer}.*
"""

from __future__ import annotations

import json
import pathlib
import sys
import time

import torch

from attn.book import induction_heads as ih
from attn.book import results
from attn.book.train import run_side_by_side

LAYERS = (2, 1)
SEEDS = (0, 1, 2, 3, 4)
OUT = "induction_heads"  # benchmarks/measured/induction_heads.json, shipped by setup.py (attn.book.results)
CHECKPOINTS = pathlib.Path(ih.__file__).resolve().parent / "checkpoints"
NAMES = {2: "induction", 1: "induction_1layer"}
COMMAND = "PYTHONPATH=src python -m scripts.induction_heads"


def _rounded(x, digits: int = 4):
    if isinstance(x, torch.Tensor):
        x = x.tolist()
    if isinstance(x, list):
        return [_rounded(v, digits) for v in x]
    return round(float(x), digits)


def _maybe_round(x, digits: int):
    return None if x is None else round(x, digits)


def run(setting: tuple[int, int], steps: int = ih.RECIPE["steps"]) -> dict:
    """One run (``(num_layers, seed)``): its curves, phase-change step, final losses and head scores
    on :func:`attn.book.induction_heads.held_out`, its processor time; the seed-0 state in float16."""
    num_layers, seed = setting
    start = time.process_time()
    model, log = ih.train(num_layers, seed, steps=steps)
    seconds = time.process_time() - start
    scores = ih.head_scores(model, *ih.held_out())
    out = dict(num_layers=num_layers, seed=seed, train_cpu_seconds=round(seconds, 2),
               phase_change_step=ih.phase_change_step(log),
               phase_change=_maybe_round(ih.phase_change_step(log, interpolate=True), 1),
               heads_form={kind: _maybe_round(ih.score_rise_step(log, kind, layer), 1)
                           for kind, layer in (("previous_token", 0), ("induction", num_layers - 1))},
               final=dict(first=round(log["first"][-1], 4), repeat=round(log["repeat"][-1], 4)),
               scores={k: _rounded(v, 3) for k, v in scores.items()},
               curve={k: (v if k == "step" else _rounded(v, 4 if k in ("first", "repeat") else 3))
                      for k, v in log.items()})
    if seed == 0:
        out["state"] = {k: v.half() for k, v in model.state_dict().items()}
    return out


def save_checkpoint(r: dict, folder: pathlib.Path = CHECKPOINTS) -> dict:
    """Save run ``r``'s float16 state and its card; the card's losses and scores are measured on the
    model loaded back from float16, as :func:`attn.book.induction_heads.load` gives it."""
    name = NAMES[r["num_layers"]]
    folder.mkdir(parents=True, exist_ok=True)
    torch.save(r["state"], folder / f"{name}.pt")
    model = ih.new_model(r["num_layers"])
    model.load_state_dict(r["state"])  # float16 copied into float32 parameters
    model.eval()
    tokens, periods = ih.held_out()
    card = dict(name=name, num_layers=r["num_layers"], seed=r["seed"], sizes=ih.SIZES, length=ih.LENGTH,
                periods=[ih.MIN_PERIOD, ih.MAX_PERIOD], recipe=ih.RECIPE, held_out=dict(batch=256, seed=ih.HELD_OUT_SEED),
                dtype="float16", torch=torch.__version__, command=COMMAND,
                train_cpu_seconds=r["train_cpu_seconds"], phase_change_step=r["phase_change_step"],
                phase_change=r["phase_change"],
                losses={k: round(v, 6) for k, v in ih.split_losses(model, tokens, periods).items()},
                scores={k: _rounded(v, 3) for k, v in ih.head_scores(model, tokens, periods).items()})
    (folder / f"{name}.json").write_text(json.dumps(card, indent=1) + "\n")
    return card


def main(argv: list[str]) -> None:
    """``python -m scripts.induction_heads [OUT.json [CHECKPOINT_FOLDER]]`` (defaults: the files the chapter reads)."""
    out = argv[0] if argv else OUT
    folder = pathlib.Path(argv[1]) if len(argv) > 1 else CHECKPOINTS
    runs = run_side_by_side(run, [(n, s) for n in LAYERS for s in SEEDS])  # one thread each
    cards = [save_checkpoint(r, folder) for r in runs if "state" in r]
    for r in runs:
        r.pop("state", None)
    meta = dict(layers=list(LAYERS), seeds=list(SEEDS), **ih.RECIPE, sizes=ih.SIZES, length=ih.LENGTH,
                periods=[ih.MIN_PERIOD, ih.MAX_PERIOD], threshold=ih.THRESHOLD, rise=ih.RISE, chance=round(ih.CHANCE, 4),
                held_out=dict(batch=256, seed=ih.HELD_OUT_SEED), threads=1, torch=torch.__version__,
                command=COMMAND, checkpoints={c["name"]: c["losses"] for c in cards},
                cpu_seconds={f"{r['num_layers']}-layer seed {r['seed']}": r["train_cpu_seconds"] for r in runs})
    results.write(out, dict(meta=meta, runs=runs))


if __name__ == "__main__":
    main(sys.argv[1:])
