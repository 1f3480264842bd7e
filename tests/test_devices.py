"""Every module and function of attn that computes with tensors runs on the ``meta`` device and in
float64, and returns its results there: a tensor created on the wrong device (``torch.arange(L)``
without ``device=``) or in a fixed dtype fails here, on a CPU-only machine, as it would on a GPU.

``meta`` tensors have shapes and dtypes but no data, so code that reads values in Python
(``.item()``, ``if t.any()``) cannot run on them: those cases run in float64 on the CPU only, and
say why. Modules are built under ``torch.device(...)`` (as a GPU user would) and then called
*outside* it, so that a tensor the forward pass makes without ``device=`` lands on the CPU and
fails against the inputs.
"""

from __future__ import annotations

import pytest
import torch

import attn
from attn import efficient as ef
from attn import masks
from attn import positional as P
from attn import variants as V

META = torch.device("meta")
CPU = torch.device("cpu")


def build(device, dtype, make):
    """A module made under ``device`` (parameters and buffers there), then cast to ``dtype``."""
    with torch.device(device):
        m = make()
    return m.to(dtype)


def rnd(device, dtype, *shape):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(sum(shape)), dtype=dtype).to(device)


def tokens(device, *shape, high=16):
    return torch.randint(0, high, shape, generator=torch.Generator().manual_seed(1)).to(device)


def qkv(d, t, L=6, S=6, E=8):
    return rnd(d, t, 2, 2, L, E), rnd(d, t, 2, 2, S, E), rnd(d, t, 2, 2, S, E)


def _mha_cached(d, t):
    mha = build(d, t, lambda: attn.MultiHeadAttention(8, 2, positional=P.RotaryPositionalEncoding(4)))
    cache = attn.KVCache()
    mha(rnd(d, t, 2, 3, 8), is_causal=True, cache=cache)
    return mha(rnd(d, t, 2, 1, 8), is_causal=True, cache=cache)[0]


def _gqa_cached(d, t):
    gqa = build(d, t, lambda: ef.GroupedQueryAttention(8, 4, 2))
    cache = attn.KVCache()
    gqa(rnd(d, t, 2, 3, 8), is_causal=True, cache=cache)
    return gqa(rnd(d, t, 2, 1, 8), is_causal=True, cache=cache, need_weights=True)


def _efficient(kind):
    return lambda d, t: build(d, t, lambda: ef.EfficientSelfAttention(
        8, 2, kind, window=2, rank=3, seq_len=6, global_tokens=(0,), stride=2, num_buckets=2, chunk_size=2))(
        rnd(d, t, 2, 6, 8), is_causal=kind not in ("linformer", "longformer"))[0]


def _positional_in_attention(make):
    return lambda d, t: build(d, t, lambda: attn.MultiHeadAttention(8, 2, positional=make()))(
        rnd(d, t, 2, 5, 8), is_causal=True, need_weights=True)


#: name -> f(device, dtype) returning a tensor or a tuple of tensors
CASES = {
    # functional: each path (fused, fused with a mask, bottom-right is_causal, weights)
    "scaled_dot_product_attention": lambda d, t: attn.scaled_dot_product_attention(*qkv(d, t)),
    "scaled_dot_product_attention(is_causal, L != S)": lambda d, t: attn.scaled_dot_product_attention(
        *qkv(d, t, L=4, S=6), is_causal=True),
    "scaled_dot_product_attention(mask (S,), is_causal)": lambda d, t: attn.scaled_dot_product_attention(
        *qkv(d, t), mask=torch.ones(6, dtype=torch.bool, device=d), is_causal=True),
    "scaled_dot_product_attention(return_weights)": lambda d, t: attn.scaled_dot_product_attention(
        *qkv(d, t, L=4), mask=torch.zeros(4, 6, dtype=t, device=d), is_causal=True, return_weights=True),
    "explicit_attention": lambda d, t: attn.functional.explicit_attention(*qkv(d, t)),
    "attend": lambda d, t: attn.functional.attend(*qkv(d, t, L=4), is_causal=True),
    "attend(return_weights)": lambda d, t: attn.functional.attend(*qkv(d, t), is_causal=True, return_weights=True),
    "prepare_mask": lambda d, t: attn.functional.prepare_mask(
        torch.zeros(6, dtype=torch.float32, device=d), True, 4, 6, (2, 2), t, d),
    # masks that take a device or work on given tensors
    "masks.causal": lambda d, _t: masks.causal(4, 6, offset=2, device=d),
    "masks.distances": lambda d, _t: masks.distances(4, 6, offset=2, device=d),
    "masks.distances_between": lambda d, _t: masks.distances_between(torch.arange(2, 6, device=d), torch.arange(6, device=d)),
    "masks.sliding_window": lambda d, _t: masks.sliding_window(4, 6, window=2, is_causal=True, offset=2, device=d),
    "masks.masked_softmax": lambda d, t: masks.masked_softmax(rnd(d, t, 2, 4, 6), masks.causal(4, 6, device=d)),
    "masks.restrict": lambda d, t: masks.restrict(torch.zeros(4, 6, dtype=t, device=d), masks.causal(4, 6, device=d)),
    "masks.add_bias": lambda d, t: masks.add_bias(masks.causal(4, 6, device=d), rnd(d, t, 4, 6)),
    "masks.combine": lambda d, _t: masks.combine(masks.causal(4, device=d), masks.causal(4, device=d)),
    "masks.to_additive": lambda d, t: masks.to_additive(masks.causal(4, device=d), t),
    "masks.from_additive": lambda d, t: masks.from_additive(torch.zeros(4, 4, dtype=t, device=d)),
    "masks.from_key_padding_mask": lambda d, _t: masks.from_key_padding_mask(torch.zeros(2, 4, dtype=torch.bool, device=d)),
    "masks.fully_masked_rows": lambda d, _t: masks.fully_masked_rows(masks.causal(4, device=d)),
    # attention
    "SelfAttention": lambda d, t: build(d, t, lambda: attn.SelfAttention(8))(rnd(d, t, 2, 5, 8), is_causal=True,
                                                                             need_weights=True),
    "MultiHeadAttention(key_mask, weights)": lambda d, t: build(d, t, lambda: attn.MultiHeadAttention(8, 2))(
        rnd(d, t, 2, 5, 8), key_mask=torch.ones(2, 5, dtype=torch.bool, device=d), is_causal=True, need_weights=True),
    "MultiHeadAttention + KVCache + RoPE": _mha_cached,
    # positional encodings: at the input, on the scores, on q and k
    "SinusoidalPositionalEncoding": lambda d, t: build(d, t, lambda: P.SinusoidalPositionalEncoding(8, 16))(
        rnd(d, t, 2, 5, 8), offset=3),
    "LearnedPositionalEncoding": lambda d, t: build(d, t, lambda: P.LearnedPositionalEncoding(8, 16))(
        rnd(d, t, 2, 5, 8), offset=3),
    "Sinusoidal2DPositionalEncoding": lambda d, t: build(d, t, lambda: P.Sinusoidal2DPositionalEncoding(8, 2, 3))(
        rnd(d, t, 2, 6, 8)),
    "ShawRelativePositionalBias": _positional_in_attention(lambda: P.ShawRelativePositionalBias(4, 2, 3)),
    "T5RelativePositionBias": _positional_in_attention(lambda: P.T5RelativePositionBias(2, 8, 16)),
    "ALiBi": _positional_in_attention(lambda: P.ALiBi(2)),
    "RotaryPositionalEncoding": _positional_in_attention(lambda: P.RotaryPositionalEncoding(4)),
    # blocks and models
    "FeedForward": lambda d, t: build(d, t, lambda: attn.blocks.FeedForward(8, 16))(rnd(d, t, 2, 5, 8)),
    "EncoderLayer(norm_first)": lambda d, t: build(d, t, lambda: attn.blocks.EncoderLayer(8, 2, 16, norm_first=True))(
        rnd(d, t, 2, 5, 8), is_causal=True),
    "AttentionOnlyLayer": lambda d, t: build(d, t, lambda: attn.blocks.AttentionOnlyLayer(8, 2, norm_first=True))(
        rnd(d, t, 2, 5, 8), is_causal=True),
    "DecoderLayer": lambda d, t: build(d, t, lambda: attn.blocks.DecoderLayer(8, 2, 16))(
        rnd(d, t, 2, 3, 8), rnd(d, t, 2, 5, 8), memory_key_mask=torch.ones(2, 5, dtype=torch.bool, device=d)),
    "Encoder": lambda d, t: build(d, t, lambda: attn.blocks.Encoder(attn.blocks.EncoderLayer(8, 2, 16), 2))(
        rnd(d, t, 2, 5, 8), key_mask=torch.ones(2, 5, dtype=torch.bool, device=d)),
    "Decoder": lambda d, t: build(d, t, lambda: attn.blocks.Decoder(attn.blocks.DecoderLayer(8, 2, 16), 2))(
        rnd(d, t, 2, 3, 8), rnd(d, t, 2, 5, 8)),
    "Transformer": lambda d, t: build(d, t, lambda: attn.blocks.Transformer(8, 2, 1, 1, 16))(
        rnd(d, t, 2, 5, 8), rnd(d, t, 2, 3, 8)),
    # efficient
    "tiled_attention(is_causal, additive mask)": lambda d, t: ef.tiled_attention(
        *qkv(d, t, L=5, S=7), is_causal=True, mask=torch.zeros(5, 7, dtype=t, device=d), block_size=2),
    "online_softmax_update": lambda d, t: ef.online_softmax_update(
        torch.full((1, 2, 1), float("-inf"), dtype=t, device=d), torch.zeros(1, 2, 1, dtype=t, device=d),
        torch.zeros(1, 2, 3, dtype=t, device=d), rnd(d, t, 1, 2, 4), rnd(d, t, 1, 4, 3)),
    "banded_attention": lambda d, t: ef.banded_attention(*qkv(d, t, L=7, S=7), window=2, is_causal=True),
    "linear_attention": lambda d, t: ef.linear_attention(*qkv(d, t), is_causal=True, chunk_size=4),
    "linear_attention(non-causal)": lambda d, t: ef.linear_attention(*qkv(d, t, L=4)),
    "linear_attention_recurrent": lambda d, t: ef.linear_attention_recurrent(*qkv(d, t)),
    "elu_feature_map": lambda d, t: ef.elu_feature_map(rnd(d, t, 3, 4)),
    "linformer_attention": lambda d, t: ef.linformer_attention(*qkv(d, t), rnd(d, t, 3, 6)),
    "LinformerProjection": lambda d, t: build(d, t, lambda: ef.LinformerProjection(6, 3))(*qkv(d, t)),
    "GroupedQueryAttention + KVCache": _gqa_cached,
    "checkpointed": lambda d, t: ef.checkpointed(
        build(d, t, lambda: torch.nn.ModuleList([attn.blocks.EncoderLayer(8, 2, 16)])), rnd(d, t, 2, 5, 8),
        checkpoint_layers=False, is_causal=True),
    "SegmentRecurrentLM": lambda d, t: build(d, t, lambda: ef.SegmentRecurrentLM(16, 8, 2))(
        tokens(d, 2, 4), [rnd(d, t, 2, 3, 8)]),
    **{f"EfficientSelfAttention({k})": _efficient(k) for k in ef.KINDS if k != "longformer"},
    "strided_attention": lambda d, t: ef.strided_attention(*qkv(d, t, L=7, S=7), window=1, stride=3, is_causal=True),
    "lsh_attention": lambda d, t: ef.lsh_attention(*qkv(d, t)[::2], num_buckets=4, chunk_size=2, num_hashes=2,
                                                   is_causal=True),
    "lsh_buckets": lambda d, t: ef.lsh_buckets(rnd(d, t, 2, 6, 8), ef.random_rotations(8, num_buckets=4).to(d, t)),
}

#: cases that read tensor values in Python: float64 on the CPU only
NOT_ON_META = {
    "tiled_attention(bool mask)": (lambda d, t: ef.tiled_attention(
        *qkv(d, t, L=5, S=7), mask=masks.causal(5, 7, device=d), block_size=2), "skips tiles a bool mask blocks (.any())"),
    "longformer_attention": (lambda d, t: ef.longformer_attention(*qkv(d, t, L=7, S=7), window=2),
                             "checks its global token indices (.any())"),
    "EfficientSelfAttention(longformer)": (_efficient("longformer"), "checks its global token indices (.any())"),
    "BART": (lambda d, t: build(d, t, lambda: V.BART(16, 8, 2, 1, max_len=8))(tokens(d, 2, 5), tokens(d, 2, 3)),
             "checks token ids"),
    "bigbird_attention": (lambda d, t: ef.bigbird_attention(
        *qkv(d, t, L=7, S=7), window=2, random=ef.random_keys(7, num_random=2).to(d)), "checks its random keys (.any())"),
    "TokenModel": (lambda d, t: build(d, t, lambda: attn.models.TokenModel(16, 8, 2, 1, max_len=8, is_causal=True))(
        tokens(d, 2, 5)), "checks the token ids' range (.max())"),
    "Seq2Seq": (lambda d, t: build(d, t, lambda: attn.models.Seq2Seq(16, 16, 8, 2, 1, 1, max_len=8))(
        tokens(d, 2, 5), tokens(d, 2, 3)), "checks the token ids' range"),
    "BERT": (lambda d, t: build(d, t, lambda: V.BERT(16, 8, 2, 1, max_len=8))(tokens(d, 2, 5)), "checks token ids"),
    "GPT": (lambda d, t: build(d, t, lambda: V.GPT(16, 8, 2, 1, max_len=8))(tokens(d, 2, 5)), "checks token ids"),
    "T5": (lambda d, t: build(d, t, lambda: V.T5(16, 8, 2, 1, num_buckets=8, max_distance=16))(
        tokens(d, 2, 5), tokens(d, 2, 3)), "checks token ids"),
    "ViT": (lambda d, t: build(d, t, lambda: V.ViT(4, 2, 3, 8, 2, 1))(rnd(d, t, 2, 1, 4, 4)),
            "runs on meta too; with the token models for brevity"),
}

#: public names that create no tensor on a device of their own choosing, or are not computations
NOT_TENSOR_CODE = {
    # mask builders without a device argument: they return CPU masks by contract (move them with .to)
    "masks.padding", "masks.cross_padding", "masks.dilated", "masks.local_global",
    "masks.bigbird", "masks.prefix_lm", "masks.seeded_uniform", "masks.random_keys",
    # tables and helpers computed once on the CPU, then registered as buffers that follow .to()
    "positional.sinusoidal_table", "positional.t5_bucket", "positional.alibi_slopes", "positional.ENCODINGS",
    "attention.record_attention",  # a context manager that records weights (covered by the modules it wraps)
    "efficient.random_keys", "efficient.random_rotations",  # seeded CPU data, documented as such
    "efficient.strided_score_count", "efficient.lsh_score_count",  # counts (Python ints) from sizes
    "efficient.KINDS", "efficient.kv_cache_bytes",
    "efficient.saved_activation_bytes", "efficient.swap_attention",  # bookkeeping around other calls
    "efficient.online_softmax_steps",  # a float64 step-by-step view for a figure (yields Python floats)
    "variants.comparison",  # the five description cards as rows
    "blocks.ACTIVATIONS", "blocks.activation_function",  # a table of functions and its lookup (the layers run them)
}


def _outputs(out):
    if isinstance(out, torch.Tensor):
        return [out]
    if isinstance(out, (tuple, list)):
        return [t for o in out for t in _outputs(o)]
    return []


def _check(out, device, dtype):
    tensors = _outputs(out)
    assert tensors, "the case returned no tensor"
    for t in tensors:
        assert t.device.type == device.type, f"an output is on {t.device}, inputs on {device}"
        if t.is_floating_point():
            assert t.dtype == dtype, f"an output has dtype {t.dtype}, inputs {dtype}"


@pytest.mark.parametrize("name", sorted(CASES))
def test_runs_on_the_meta_device(name):
    _check(CASES[name](META, torch.float32), META, torch.float32)


@pytest.mark.parametrize("name", sorted(CASES) + sorted(NOT_ON_META))
def test_runs_in_float64(name):
    case = CASES[name] if name in CASES else NOT_ON_META[name][0]
    _check(case(CPU, torch.float64), CPU, torch.float64)


def test_vit_runs_on_the_meta_device():
    _check(NOT_ON_META["ViT"][0](META, torch.float32), META, torch.float32)


def test_every_public_tensor_function_and_module_has_a_case():
    """A new public name must join CASES (or NOT_ON_META, or NOT_TENSOR_CODE with a reason), and a
    name listed here must exist."""
    covered = " ".join([*CASES, *NOT_ON_META])
    missing = []
    for mod in ("functional", "masks", "attention", "positional", "blocks", "models", "efficient", "variants"):
        for name in getattr(attn, mod).__all__:
            if f"{mod}.{name}" in NOT_TENSOR_CODE or name in covered:
                continue
            missing.append(f"{mod}.{name}")
    assert missing == [], f"public names without a device case: {missing}"
    gone = [n for n in NOT_TENSOR_CODE if n.split(".")[1] not in getattr(attn, n.split(".")[0]).__all__]
    assert gone == [], f"NOT_TENSOR_CODE names what the package no longer has: {gone}"
