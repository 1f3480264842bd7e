"""Transformer-XL-style memory: a longer effective context, shown on a task that needs it.

``attn.book.data.delayed_copy``: the target at position ``t`` is the token ``delay = 12`` positions
back. ``attn.efficient.SegmentRecurrentLM`` (1 layer, width 32, 2 heads, relative position bias)
reads sequences of 64 tokens in segments of 16, once carrying the previous segment as memory and
once without (each segment alone). Without memory, the first 12 positions of every segment cannot
see their answer. Writes ``benchmarks/measured/efficient_recurrence.csv``: accuracy per
position within the segment (segments 2-4 of the test sequences), per seed and setting.

    .venv/bin/python benchmarks/efficient_recurrence.py [--steps N] [--seeds 0 1 2] [--threads N]
"""

from __future__ import annotations

import argparse

import torch
import torch.nn.functional as F

import attn
from attn.book import results
from attn.book.data import delayed_copy
from attn.efficient.recurrence import SegmentRecurrentLM

SEGMENT, DELAY, LENGTH, VOCAB = 16, 12, 64, 16


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    test_tokens, test_targets = delayed_copy(500, LENGTH, DELAY, vocab_size=VOCAB, seed=0)
    rows = []
    for seed in args.seeds:
        for memory in (False, True):
            torch.manual_seed(seed)
            model = SegmentRecurrentLM(VOCAB, 32, 2, 1, max_distance=2 * SEGMENT)
            opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
            with attn.measure.stopwatch() as took:
                for step in range(args.steps):
                    tokens, targets = delayed_copy(32, LENGTH, DELAY, vocab_size=VOCAB, seed=1000 + step)
                    logits = model.segments(tokens, SEGMENT, memory=memory)
                    loss = F.cross_entropy(logits.flatten(0, 1), targets.flatten(), ignore_index=-100)
                    opt.zero_grad()
                    loss.backward()
                    opt.step()
            with torch.no_grad():
                pred = model.segments(test_tokens, SEGMENT, memory=memory).argmax(-1)
            correct = (pred == test_targets)[:, SEGMENT:].reshape(500, -1, SEGMENT).float().mean((0, 1))  # (SEGMENT,)
            row = {"seed": seed, "memory": memory, "train_s": round(took.seconds, 1), "threads": torch.get_num_threads(),
                   **{f"pos{p}": round(correct[p].item(), 4) for p in range(SEGMENT)}}
            rows.append(row)
            print(f"seed {seed} memory={memory}: accuracy {correct.mean():.3f} ({took.seconds:.0f} s)", flush=True)
            results.write("efficient_recurrence", rows)


if __name__ == "__main__":
    main()
