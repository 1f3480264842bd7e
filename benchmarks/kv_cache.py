"""Greedy generation with a KV cache vs recomputing the whole prefix at every step.

A decoder-only ``attn.models.TokenModel`` (width 256, 4 layers, 4 heads, causal, sinusoidal
positions, ``max_len`` 640; random weights, seeded) continues a 16-token prompt by 512 tokens,
batch 1, float32, on the CPU: once with one :class:`attn.KVCache` per layer (each step sends one new
token through the model) and once recomputing every position at every step. The tokens must be
identical (checked, the script fails otherwise); the goal is a speed-up of at least 5x.

    make bench        # or: .venv/bin/python benchmarks/kv_cache.py [--quick] [--threads N]

``--quick`` generates 256 tokens with one timing round. Timings interleave the two methods and
report medians, so drifts in machine load hit both alike.
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

import attn


def build(d_model: int = 256, num_layers: int = 4, num_heads: int = 4, vocab: int = 64, max_len: int = 640,
          seed: int = 0) -> attn.models.TokenModel:
    torch.manual_seed(seed)
    model = attn.models.TokenModel(vocab, d_model=d_model, num_heads=num_heads, num_layers=num_layers,
                                   causal=True, max_len=max_len)
    return model.eval()


def check_identical(model: attn.models.TokenModel, prompt: torch.Tensor, n_new: int) -> torch.Tensor:
    """Generate with and without the cache; raise if a single token differs. Returns the tokens."""
    cached = model.generate(prompt, n_new, use_cache=True)
    full = model.generate(prompt, n_new, use_cache=False)
    if not torch.equal(cached, full):
        first = int((cached != full).int().argmax())
        raise AssertionError(f"KV-cache generation differs from recomputation, first at position {first}")
    return cached


def timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def measure(model, prompt: torch.Tensor, n_new: int, rounds: int) -> tuple[float, float]:
    """Median seconds (with cache, recomputing) over ``rounds`` interleaved rounds."""
    cache, full = [], []
    for _ in range(rounds):
        cache.append(timed(lambda: model.generate(prompt, n_new, use_cache=True)))
        full.append(timed(lambda: model.generate(prompt, n_new, use_cache=False)))
    return statistics.median(cache), statistics.median(full)


def main(argv: list[str] | None = None) -> float:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="256 new tokens, one timing round")
    ap.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's own choice)")
    args = ap.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    n_new, rounds = (256, 1) if args.quick else (512, 3)
    prompt_len, d_model, num_layers, num_heads = 16, 256, 4, 4

    model = build(d_model, num_layers, num_heads, max_len=640)
    prompt = torch.randint(0, 64, (1, prompt_len), generator=torch.Generator().manual_seed(1))
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, float32, batch 1")
    print(f"TokenModel d_model={d_model} layers={num_layers} heads={num_heads}; prompt {prompt_len} tokens, "
          f"{n_new} new tokens")
    check_identical(model, prompt, n_new)  # also the warm-up
    print("tokens identical with and without the cache: True")
    t_cache, t_full = measure(model, prompt, n_new, rounds)
    ratio = t_full / t_cache
    print(f"{'method':>10} {'total s':>8} {'ms/token':>9}")
    print(f"{'kv cache':>10} {t_cache:>8.2f} {t_cache / n_new * 1e3:>9.2f}")
    print(f"{'recompute':>10} {t_full:>8.2f} {t_full / n_new * 1e3:>9.2f}")
    print(f"speed-up (recompute / cache): {ratio:.1f}x (goal >= 5x at 512 tokens)")
    return ratio


if __name__ == "__main__":
    main()
