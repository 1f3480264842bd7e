"""Which remedy breaks which task: the same small model trained with full, sliding-window,
Longformer, strided (Sparse Transformer), LSH (Reformer), linear and Linformer attention on
key-value recall, scored separately on its local relation and on its long-range one.

``attn.book.data.kv_recall`` with 16 keys (sequence length 24) has two kinds of targets in every
sequence: at a pair token, the value of the *previous* token (local: one position back); at a
query token, the value paired with the same key somewhere earlier (long range: anywhere in the
sequence). A ``attn.models.TokenModel`` (encoder, 1 layer, width 64, 4 heads) is trained per
attention kind and seed, with the attention step swapped by ``attn.efficient.swap_attention``;
the script writes ``benchmarks/measured/efficient_quality.csv`` (accuracy per relation, training
seconds, process CPU seconds, torch version) which the chapter reads. The committed run:

    nice -n 5 .venv/bin/python benchmarks/efficient_quality.py --threads 1

(400 steps, seeds 0 1 2, about 5 minutes of CPU time in all).
"""

from __future__ import annotations

import argparse
import pathlib
import time

import torch
import torch.nn.functional as F

import attn
from attn.book import results

TASK = attn.book.data.KVRecall(num_keys=16, num_values=8, num_queries=8)
KINDS = {  # name -> swap_attention arguments
    "full": {"kind": "full"},
    "window (w=3)": {"kind": "window", "window": 3},
    "Longformer (w=3, global: token 0)": {"kind": "longformer", "window": 3, "global_tokens": (0,)},
    "Longformer (w=3, global: queries)": {"kind": "longformer", "window": 3,
                                          "global_tokens": tuple(range(TASK.num_keys, TASK.seq_len))},
    "strided (w=3, stride 5)": {"kind": "strided", "window": 3, "stride": 5},
    "LSH (4 buckets, chunks of 4, 2 rounds)": {"kind": "lsh", "num_buckets": 4, "chunk_size": 4, "num_hashes": 2},
    "linear (elu+1)": {"kind": "linear"},
    "Linformer (r=8)": {"kind": "linformer", "rank": 8, "seq_len": TASK.seq_len},
}
OUT = results.MEASURED / "efficient_quality.csv"


def make_model(spec: dict, seed: int) -> attn.models.TokenModel:
    torch.manual_seed(seed)
    model = attn.models.TokenModel(TASK.vocab_size, d_model=64, num_heads=4, num_layers=1, max_len=TASK.seq_len)
    return attn.efficient.swap_attention(model, **spec)


def loss_fn(model, batch) -> torch.Tensor:
    tokens, targets, _ = batch
    return F.cross_entropy(model(tokens).flatten(0, 1), targets.flatten(), ignore_index=attn.book.data.IGNORE)


@torch.no_grad()
def accuracy(model, test) -> dict[str, float]:
    tokens, targets, kind = test
    correct = model(tokens).argmax(-1) == targets
    return {"local": correct[kind == 1].float().mean().item(), "long_range": correct[kind == 2].float().mean().item()}


def main(argv: list[str] | None = None) -> list[dict]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=400)
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--out", type=pathlib.Path, default=OUT)
    ap.add_argument("--kinds", nargs="+", default=list(KINDS), help="a subset of the attention names")
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    batches = [attn.book.data.kv_recall(64, TASK, seed=10_000 + s) for s in range(args.steps)]
    test = attn.book.data.kv_recall(2000, TASK, seed=0)
    rows = []
    print(f"kv_recall: {TASK.num_keys} keys, length {TASK.seq_len}; {args.steps} steps, batch 64, "
          f"{torch.get_num_threads()} threads")
    for seed in args.seeds:  # seed by seed, so an interrupted sweep still has every kind
        for name in args.kinds:
            model = make_model(KINDS[name], seed)
            cpu = time.process_time()
            with attn.measure.stopwatch() as took:
                attn.book.train.train(model, batches.__getitem__, loss_fn, steps=args.steps, lr=3e-3, warmup=50,
                                 seed=seed, progress=False)
            acc = accuracy(model, test)
            rows.append({"attention": name, "seed": seed, "threads": torch.get_num_threads(),
                         "local": round(acc["local"], 4), "long_range": round(acc["long_range"], 4),
                         "train_s": round(took.seconds, 1), "cpu_s": round(time.process_time() - cpu, 1),
                         "steps": args.steps, "torch": torch.__version__.split("+")[0]})
            print(f"{name:>16} seed {seed}: local {acc['local']:.3f}  long-range {acc['long_range']:.3f}  "
                  f"{took.seconds:.1f} s", flush=True)
            results.write(args.out, rows)  # after every run: a stopped sweep keeps its results
    return rows


if __name__ == "__main__":
    main()
