"""Long sequences: what attention costs, and what the remedies in ``attn.efficient`` save.

Float32, B=1, H=8, E=64 on the CPU; every ratio is measured side by side in one run (methods
interleaved, medians), so machine load hits both sides alike. Times are ``attn.measure.compare``'s; peak memory
is ``attn.measure.peak_memory_growth``: how far the peak resident memory of a forked child rises while
one call runs there (on one thread): Linux only.

1. cost: time and peak memory of the explicit path (stores the L x S weights), PyTorch's fused
   SDPA and ``tiled_attention``, forward and forward+backward, against length.
2. tiled: ``tiled_attention`` / SDPA time, causal and not, n = 1024..8192, and the largest error.
3. memory: extra memory at n = 16384 (forward, no grad) of SDPA and ``tiled_attention``.
4. banded: sliding window (w = 256) in bands vs SDPA with the same (L, L) mask.
5. checkpoint: a stack of 8 encoder blocks, forward+backward with and without checkpointing.

Results go to ``benchmarks/measured/efficient_*.csv`` (copied into the package when it is built,
read by the chapter through ``attn.book.results.measured``) and are printed.

    .venv/bin/python benchmarks/efficient.py [--quick] [--threads N] [--only cost tiled ...]
"""

from __future__ import annotations

import argparse
from functools import partial

import torch
import torch.nn.functional as F

import attn
from attn.book import results
from attn import efficient as ef

H, E = 8, 64


def peak_mb(fn) -> float:
    """Growth of peak resident memory while ``fn()`` runs once, in MiB (``attn.measure``: a forked
    child on one thread)."""
    return round(max(0.0, attn.measure.peak_memory_growth(fn)), 1)


def seconds(fns: dict, rounds: int) -> dict[str, float]:
    """Median seconds of each ``fns[name]()``, the methods interleaved round by round."""
    return attn.measure.compare(fns, rounds=rounds, min_run_time=0)


def qkv(n: int, requires_grad: bool = False, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(1, H, n, E, generator=g).requires_grad_(requires_grad) for _ in range(3)]


METHODS = {
    "explicit": lambda q, k, v, c: attn.functional.explicit_attention(
        q, k, v, attn.masks.causal(q.shape[-2]) if c else None)[0],
    "sdpa": lambda q, k, v, c: F.scaled_dot_product_attention(q, k, v, is_causal=c),
    "tiled": lambda q, k, v, c: ef.tiled_attention(q, k, v, is_causal=c, block_size=256),
}


def run_cost(lengths, rounds):
    rows = []
    for n in lengths:
        for method, f in METHODS.items():
            q, k, v = qkv(n)
            qg, kg, vg = qkv(n, requires_grad=True)

            def fwd(f=f, q=q, k=k, v=v):  # bind this round's method and inputs
                with torch.no_grad():
                    f(q, k, v, False)

            def fwd_bwd(f=f, qg=qg, kg=kg, vg=vg):
                f(qg, kg, vg, False).sum().backward()

            t = seconds({"fwd": fwd, "fwd_bwd": fwd_bwd}, rounds)
            row = {"n": n, "method": method, "fwd_s": round(t["fwd"], 5), "fwd_bwd_s": round(t["fwd_bwd"], 5),
                   "fwd_peak_mb": peak_mb(fwd), "fwd_bwd_peak_mb": peak_mb(fwd_bwd),
                   "weights_mb": round(H * n * n * 4 / 2**20, 1)}
            rows.append(row)
            print(row, flush=True)
    return rows


def run_tiled(lengths, rounds):
    rows = []
    for n in lengths:
        q, k, v = qkv(n)
        for causal in (False, True):
            with torch.no_grad():
                err = (ef.tiled_attention(q, k, v, is_causal=causal) - F.scaled_dot_product_attention(q, k, v, is_causal=causal)).abs().max().item()
                t = seconds({"sdpa": partial(F.scaled_dot_product_attention, q, k, v, is_causal=causal),
                             "tiled": partial(ef.tiled_attention, q, k, v, is_causal=causal, block_size=256)}, rounds)
            row = {"n": n, "causal": causal, "sdpa_s": round(t["sdpa"], 4), "tiled_s": round(t["tiled"], 4),
                   "ratio": round(t["tiled"] / t["sdpa"], 2), "max_abs_err": f"{err:.1e}"}
            rows.append(row)
            print(row, flush=True)
    return rows


def run_memory(n):
    q, k, v = qkv(n)
    rows = []
    for method in ("sdpa", "tiled"):
        with torch.no_grad():
            mb = peak_mb(partial(METHODS[method], q, k, v, False))
        rows.append({"n": n, "method": method, "fwd_peak_mb": round(mb, 1), "output_mb": round(q.nbytes / 2**20, 1),
                     "explicit_weights_mb": round(H * n * n * 4 / 2**20, 1)})
        print(rows[-1], flush=True)
    return rows


def run_banded(lengths, rounds, window=256):
    rows = []
    for n in lengths:
        q, k, v = qkv(n)
        m = attn.masks.sliding_window(n, window=window)
        with torch.no_grad():
            err = (ef.banded_attention(q, k, v, window=window) - F.scaled_dot_product_attention(q, k, v, attn_mask=m)).abs().max().item()
            t = seconds({"sdpa_mask": partial(F.scaled_dot_product_attention, q, k, v, attn_mask=m),
                         "banded": partial(ef.banded_attention, q, k, v, window=window)}, rounds)
        row = {"n": n, "window": window, "sdpa_mask_s": round(t["sdpa_mask"], 4), "banded_s": round(t["banded"], 4),
               "speedup": round(t["sdpa_mask"] / t["banded"], 2), "max_abs_err": f"{err:.1e}"}
        rows.append(row)
        print(row, flush=True)
    return rows


def run_checkpoint(rounds, L=512, layers=8, d_model=256):
    torch.manual_seed(0)
    stack = torch.nn.ModuleList(attn.blocks.EncoderLayer(d_model, 8, 4 * d_model, dropout=0.0, norm_first=True)
                                for _ in range(layers))
    x = torch.randn(4, L, d_model, requires_grad=True)
    fns = {c: (lambda c=c: ef.checkpointed(stack, x, checkpoint_layers=c).sum().backward()) for c in (False, True)}
    t = seconds({str(c): f for c, f in fns.items()}, rounds)
    rows = []
    for c, f in fns.items():
        _, saved = ef.saved_activation_bytes(partial(ef.checkpointed, stack, x, checkpoint_layers=c))
        rows.append({"checkpoint": c, "layers": layers, "L": L, "batch": 4, "d_model": d_model,
                     "fwd_bwd_s": round(t[str(c)], 4), "peak_mb": peak_mb(f),
                     "saved_mb": round(saved / 2**20, 1)})
        print(rows[-1], flush=True)
    return rows


def write(name: str, rows: list[dict]) -> None:
    rows = [{**row, "threads": torch.get_num_threads()} for row in rows]
    results.write(f"efficient_{name}", rows)  # benchmarks/measured/, shipped with the package (setup.py)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer lengths and rounds")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--only", nargs="+", default=["cost", "tiled", "memory", "banded", "checkpoint"])
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    rounds = 1 if args.quick else 3
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, float32, B=1, H={H}, E={E}")
    if "cost" in args.only:
        write("cost", run_cost([256, 512, 1024, 2048] if args.quick else [256, 512, 1024, 2048, 4096], rounds))
    if "tiled" in args.only:
        rows = run_tiled([1024, 2048] if args.quick else [1024, 2048, 4096, 8192], rounds)
        write("tiled", rows)
        print(f"tiled / SDPA time: max {max(r['ratio'] for r in rows):.2f}x (goal <= 2.0x)")
    if "memory" in args.only:
        rows = run_memory(8192 if args.quick else 16384)
        write("memory", rows)
        print(f"tiled / SDPA extra memory: {rows[1]['fwd_peak_mb'] / max(rows[0]['fwd_peak_mb'], 1e-9):.2f}x (goal <= 2x)")
    if "banded" in args.only:
        rows = run_banded([2048, 4096, 8192] if args.quick else [2048, 4096, 8192, 16384], rounds)
        write("banded", rows)
        print("banded speed-up over SDPA with the mask: " + ", ".join(f"n={r['n']}: {r['speedup']}x" for r in rows))
    if "checkpoint" in args.only:
        rows = run_checkpoint(rounds)
        write("checkpoint", rows)
        print(f"checkpointing: time x{rows[1]['fwd_bwd_s'] / rows[0]['fwd_bwd_s']:.2f}, "
              f"peak memory x{rows[1]['peak_mb'] / rows[0]['peak_mb']:.2f}")


if __name__ == "__main__":
    main()
