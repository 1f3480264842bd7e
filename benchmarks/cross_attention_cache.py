"""Cached cross-attention keys/values vs re-projecting them at every decoding step.

During greedy decoding of an encoder-decoder, the cross-attention keys and values ``K = M W_K`` and
``V = M W_V`` depend only on the encoder output ``M``, not on the step. ``Seq2Seq.generate`` can
compute them once per source ("all", the default: a static ``KVCache`` per decoder layer) or project
the memory again at every step ("self", ``cross_cache=False``: only self-attention is cached). Both
give identical tokens (checked with ``torch.equal`` before timing); this script measures the time
of a whole ``generate`` call (encoder pass included) for each, on random weights and random sources, and
prints the ratio ``time("self") / time("all")``. The goal is >= 1.5x where the projections matter:
long sources, batches of 32-64.

    .venv/bin/python benchmarks/cross_attention_cache.py [--quick] [--threads N]

Timings (``attn.measure.compare``) interleave the two settings and report medians of wall-clock
time, then, in a second measurement, of this process's processor time (``clock="process"``; with
one thread it is not inflated by other programs on a shared machine). Without ``eos_id`` every call
decodes exactly ``--steps`` tokens.
"""

from __future__ import annotations

import argparse
from functools import partial

import torch

import attn


def median_times(fns: dict, repeats: int) -> dict[str, tuple[float, float]]:
    """{name: (median wall seconds, median processor seconds)}, the functions interleaved."""
    wall = attn.measure.compare(fns, rounds=repeats, min_run_time=0)
    cpu = attn.measure.compare(fns, rounds=repeats, min_run_time=0, clock="process")
    return {name: (wall[name], cpu[name]) for name in fns}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="a smaller model, fewer source lengths and repeats")
    ap.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's choice)")
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--steps", type=int, default=None, help="tokens decoded per call")
    args = ap.parse_args()
    if args.threads is not None:
        torch.set_num_threads(args.threads)
    if args.quick:
        d_model, heads, layers, lengths, repeats, steps = 128, 4, 2, [64, 256], 3, 32
    else:
        d_model, heads, layers, lengths, repeats, steps = 256, 8, 2, [64, 256, 512], 5, 48
    steps = args.steps or steps
    B, vocab = args.batch, 64

    torch.manual_seed(0)
    model = attn.models.Seq2Seq(vocab, vocab, d_model=d_model, num_heads=heads, num_encoder_layers=layers,
                                num_decoder_layers=layers, max_len=max(lengths) + steps + 1).eval()
    print(f"torch {torch.__version__}, {torch.get_num_threads()} thread(s), float32; Seq2Seq d_model={d_model} "
          f"heads={heads} layers={layers}+{layers}; B={B}, {steps} decoding steps, median of {repeats}")
    print(f"{'S':>5} {'all ms':>9} {'self ms':>9} {'self/all':>9} {'all cpu ms':>11} {'self cpu ms':>12} {'cpu self/all':>13}")
    ratio = cpu_ratio = 0.0
    for S in lengths:
        g = torch.Generator().manual_seed(S)
        src = torch.randint(3, vocab, (B, S), generator=g)
        lengths_b = torch.randint(S // 2, S + 1, (B,), generator=g)
        lengths_b[0] = S  # some sources padded, the longest not
        key_mask = attn.masks.padding(lengths_b, S)[:, 0]  # (B, S) True = real token
        kw = dict(src_key_mask=key_mask, start_id=1)
        run = {"all": partial(model.generate, src, steps, **kw),
               "self": partial(model.generate, src, steps, cross_cache=False, **kw)}
        if not torch.equal(run["all"](), run["self"]()):
            raise SystemExit(f"S={S}: the two cache settings ('all', 'self') decoded different tokens")
        t = median_times(run, repeats)
        ratio, cpu_ratio = t["self"][0] / t["all"][0], t["self"][1] / t["all"][1]
        print(f"{S:>5} {t['all'][0] * 1e3:>9.1f} {t['self'][0] * 1e3:>9.1f} {ratio:>9.2f} "
              f"{t['all'][1] * 1e3:>11.1f} {t['self'][1] * 1e3:>12.1f} {cpu_ratio:>13.2f}")
    print(f"speed-up of cached cross-attention K/V at S={lengths[-1]}: {ratio:.2f}x wall, {cpu_ratio:.2f}x processor "
          "time (goal >= 1.5x; outputs identical)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
