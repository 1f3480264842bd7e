"""attn.scaled_dot_product_attention (dispatch path) vs torch's F.scaled_dot_product_attention.

The dispatch path adds input checks and mask preparation in Python, then calls PyTorch's fused
kernel; the goal is at most 1.05x its time. The explicit path (matmul, softmax, matmul; it
returns the weights) is timed too: it exists to teach, not to be fast.

    make bench        # or: .venv/bin/python benchmarks/sdpa_dispatch.py [--quick]
    .venv/bin/python benchmarks/sdpa_dispatch.py --paths   # record which kernel each call reaches

``--paths`` records, for the calls of ``attn.book.efficient_attention.sdpa_cases``, the path PyTorch takes on this
machine (fused kernel or math fallback), with the torch version, in
``benchmarks/measured/sdpa_dispatch.csv``: the efficient-attention chapter shows that record,
because the dispatch changes between torch releases (torch 2.14 sends 3-D inputs to the fused kernel).

Timings (``attn.measure.compare``) interleave the implementations and report medians, float32, B=1, H=8, E=64.
"""

from __future__ import annotations

import argparse
from functools import partial

import torch
import torch.nn.functional as F

import attn
from attn.book import results


def run(sizes, causal: bool, repeats: int) -> list[tuple]:
    rows = []
    for n in sizes:
        g = torch.Generator().manual_seed(n)
        q, k, v = (torch.randn(1, 8, n, 64, generator=g) for _ in range(3))
        fns = {
            "torch": partial(F.scaled_dot_product_attention, q, k, v, is_causal=causal),
            "attn": partial(attn.scaled_dot_product_attention, q, k, v, is_causal=causal),
            "explicit": partial(attn.scaled_dot_product_attention, q, k, v, is_causal=causal, return_weights=True),
        }
        torch.testing.assert_close(fns["attn"](), fns["torch"](), atol=1e-5, rtol=1e-5)
        # attn.measure.compare interleaves: each round times all three, so drifts in machine load hit
        # them alike, and reverses the order every other round, so no implementation always runs
        # first. The explicit path is slow at large n: it gets at most 3 rounds there, on its own.
        slow = {"explicit": fns.pop("explicit")} if n >= 4096 and repeats > 3 else {}
        t = attn.measure.compare(fns, rounds=repeats, min_run_time=0)
        t |= attn.measure.compare(slow, rounds=3, min_run_time=0) if slow else {}
        rows.append((n, causal, t["torch"], t["attn"], t["explicit"]))
    return rows


def record_paths() -> None:
    """Write benchmarks/measured/sdpa_dispatch.csv: call, path, torch version."""
    from attn.book.efficient_attention import sdpa_cases
    from attn.measure import sdpa_path
    q, k, v = (torch.randn(1, 8, 128, 64, generator=torch.Generator().manual_seed(i)) for i in range(3))
    version = torch.__version__.split("+")[0]
    rows = [dict(call=name, path=sdpa_path(fn), torch=version) for name, fn in sdpa_cases(q, k, v).items()]
    for row in rows:
        print(f"{row['call']:>56}  {row['path']}")
    results.write("sdpa_dispatch", rows)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="fewer sizes and repeats")
    ap.add_argument("--paths", action="store_true", help="only record the path of each call (measured/sdpa_dispatch.csv)")
    args = ap.parse_args()
    if args.paths:
        record_paths()
        return
    sizes = [256, 1024] if args.quick else [256, 512, 1024, 2048, 4096]
    repeats = 5 if args.quick else 15
    torch.set_num_threads(torch.get_num_threads())
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, float32, B=1 H=8 E=64")
    print(f"{'n':>5} {'causal':>6} {'torch ms':>9} {'attn ms':>8} {'attn/torch':>10} {'explicit ms':>11} {'explicit/torch':>14}")
    worst = 0.0
    for causal in (False, True):
        for n, c, tt, ta, te in run(sizes, causal, repeats):
            worst = max(worst, ta / tt)
            print(f"{n:>5} {str(c):>6} {tt * 1e3:>9.2f} {ta * 1e3:>8.2f} {ta / tt:>10.3f} {te * 1e3:>11.2f} {te / tt:>14.2f}")
    print(f"worst attn/torch ratio: {worst:.3f} (goal <= 1.05)")


if __name__ == "__main__":
    main()
