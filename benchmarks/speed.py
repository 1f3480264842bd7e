"""No speed lost: ``attn.MultiHeadAttention`` against ``nn.MultiheadAttention``, and cached decoding
against recomputation, each pair measured side by side in one run.

1. **Attention layer.** Self-attention in inference (``eval()``, ``torch.no_grad()``, float32, no
   weights returned) of ``attn.MultiHeadAttention`` and ``nn.MultiheadAttention`` holding the same
   weights (outputs checked equal first), over a grid of batch ``B`` (1, 8, 32), length ``L``
   (64, 256, 1024) and width ``D`` (128, 256, 512), with ``H = D / 64`` heads; plus a tiny input
   (B 1, L 4, D 16, H 2) that shows the per-call overhead. Goal: ours at most 1.1x PyTorch's time
   at every shape.
2. **Cached decoding.** ``TokenModel(64, d_model=256, num_heads=4, num_layers=4, is_causal=True)``
   (random weights, seeded) continues a 16-token prompt by 512 tokens, batch 1, with one
   ``KVCache`` per layer and by recomputing every position at every step; the tokens must be
   identical. Goal: the cache at least 15x faster (median of rounds).

Timings use ``attn.measure.compare`` (``torch.utils.benchmark``); the two sides of each pair alternate
round by round, and the medians are compared, so drifts in machine load hit both alike. Results go to
``benchmarks/results/speed_<threads>threads.csv`` (one row per pair).

    .venv/bin/python benchmarks/speed.py [--quick] [--threads N] [--part attention|decoding|both]

``--quick``: the grid's corners (B 1/32, L 64/1024, D 128/512), 128 new tokens, fewer rounds.
"""

from __future__ import annotations

import argparse
import itertools
import pathlib

import torch
from torch import nn

import attn
from attn.book import results

RESULTS = pathlib.Path(__file__).resolve().parent / "results"
TINY = (1, 4, 16, 2)  # B, L, D, H: the per-call overhead


def attention_pair(B: int, L: int, D: int, H: int, seed: int = 0):
    """Ours and PyTorch's layer with the same weights, an input ``(B, L, D)``, outputs checked equal."""
    torch.manual_seed(seed)
    ours = attn.MultiHeadAttention(D, H).eval()
    ref = nn.MultiheadAttention(D, H, batch_first=True).eval()
    ref.load_state_dict({"in_proj_weight": ours.in_proj.weight, "in_proj_bias": ours.in_proj.bias,
                         "out_proj.weight": ours.out_proj.weight, "out_proj.bias": ours.out_proj.bias})
    x = torch.randn(B, L, D)
    with torch.no_grad():
        torch.testing.assert_close(ours(x)[0], ref(x, x, x, need_weights=False)[0], atol=1e-5, rtol=1e-4)
    return ours, ref, x


def attention_grid(quick: bool, rounds: int) -> list[dict]:
    sizes = ((1, 32), (64, 1024), (128, 512)) if quick else ((1, 8, 32), (64, 256, 1024), (128, 256, 512))
    shapes = [TINY] + [(B, L, D, D // 64) for B, L, D in itertools.product(*sizes)]
    rows = []
    for B, L, D, H in shapes:
        ours, ref, x = attention_pair(B, L, D, H)
        t = attn.measure.compare({"ours": "with torch.no_grad(): ours(x)",
                                  "torch": "with torch.no_grad(): ref(x, x, x, need_weights=False)"},
                                 rounds=rounds, min_run_time=0.2, ours=ours, ref=ref, x=x, torch=torch)
        rows.append({"what": "attention", "B": B, "L": L, "D": D, "H": H, "ours_s": t["ours"],
                     "reference_s": t["torch"], "ratio": t["ours"] / t["torch"]})
        print(f"B{B:<3} L{L:<5} D{D:<4} H{H}: attn {t['ours'] * 1e6:10.1f} us  torch {t['torch'] * 1e6:10.1f} us"
              f"  ratio {rows[-1]['ratio']:.2f}", flush=True)
    worst = max(rows, key=lambda r: r["ratio"])
    print(f"worst ratio {worst['ratio']:.2f} at B{worst['B']} L{worst['L']} D{worst['D']} (goal <= 1.1)")
    return rows


def decoding_model(d_model: int = 256, num_heads: int = 4, num_layers: int = 4, vocab: int = 64,
                   max_len: int = 640, seed: int = 0) -> attn.models.TokenModel:
    torch.manual_seed(seed)
    return attn.models.TokenModel(vocab, d_model=d_model, num_heads=num_heads, num_layers=num_layers,
                                  is_causal=True, max_len=max_len).eval()


def decoding(n_new: int, rounds: int, prompt_len: int = 16) -> dict:
    model = decoding_model()
    prompt = torch.randint(0, 64, (1, prompt_len), generator=torch.Generator().manual_seed(1))
    if not torch.equal(model.generate(prompt, n_new), model.generate(prompt, n_new, use_cache=False)):
        raise AssertionError("cached generation gives other tokens than recomputation")
    t = attn.measure.compare({"cache": "model.generate(prompt, n, use_cache=True)",
                              "recompute": "model.generate(prompt, n, use_cache=False)"},
                             rounds=rounds, min_run_time=0, model=model, prompt=prompt, n=n_new)
    ratio = t["recompute"] / t["cache"]
    print(f"decoding {n_new} tokens after {prompt_len}: cache {t['cache']:.2f} s "
          f"({t['cache'] / n_new * 1e3:.2f} ms/token), recompute {t['recompute']:.2f} s, "
          f"speed-up {ratio:.1f}x (goal >= 15x)")
    return {"what": "decoding", "B": 1, "L": prompt_len + n_new, "D": 256, "H": 4, "ours_s": t["cache"],
            "reference_s": t["recompute"], "ratio": ratio}


def main(argv: list[str] | None = None) -> list[dict]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="grid corners, 128 new tokens, fewer rounds")
    ap.add_argument("--threads", type=int, default=2, help="torch threads (default 2)")
    ap.add_argument("--part", choices=("attention", "decoding", "both"), default="both")
    ap.add_argument("--rounds", type=int, default=None, help="alternating rounds (default 3, --quick 1)")
    ap.add_argument("--out", type=pathlib.Path, default=None, help="CSV to write (default under benchmarks/results)")
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    rounds = args.rounds or (1 if args.quick else 3)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, float32")
    rows = []
    if args.part in ("attention", "both"):
        rows += attention_grid(args.quick, rounds)
    if args.part in ("decoding", "both"):
        rows.append(decoding(128 if args.quick else 512, max(rounds, 3)))
    out = args.out or RESULTS / f"speed_{args.threads}threads{'_quick' if args.quick else ''}.csv"
    results.write(out, rows)
    return rows


if __name__ == "__main__":
    main()
