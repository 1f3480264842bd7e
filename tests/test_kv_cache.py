"""attn.KVCache: pre-allocated buffers behave exactly like concatenation, and bad input is named."""

import pytest
import torch

import attn


def steps(seed=0, B=2, H=3, E=4, Ev=5, lengths=(3, 1, 1, 70, 1, 200)):
    g = torch.Generator().manual_seed(seed)
    return [(torch.randn(B, H, n, E, generator=g), torch.randn(B, H, n, Ev, generator=g)) for n in lengths]


@pytest.mark.parametrize("capacity", [None, 1, 4, 1000])
def test_cache_returns_exactly_the_concatenation_of_all_updates(capacity):
    cache = attn.KVCache(capacity=capacity)
    seen_k, seen_v = [], []
    for k, v in steps():
        ck, cv = cache.update(k, v)
        seen_k.append(k)
        seen_v.append(v)
        assert torch.equal(ck, torch.cat(seen_k, dim=-2))
        assert torch.equal(cv, torch.cat(seen_v, dim=-2))
        assert len(cache) == ck.shape[-2]


def test_cache_writes_into_one_buffer_between_doublings():
    cache = attn.KVCache(capacity=100)
    (k0, v0), *rest = steps(lengths=(3, 1, 1, 1))
    cache.update(k0, v0)
    ptr = cache.k.untyped_storage().data_ptr()
    for k, v in rest:
        cache.update(k, v)
    assert cache.k.untyped_storage().data_ptr() == ptr  # no new allocation, no copy of the past
    assert len(cache) == 6


def test_earlier_views_keep_their_rows_after_later_updates():
    cache = attn.KVCache()
    (k0, v0), (k1, v1) = steps(lengths=(2, 1))
    first_k, _ = cache.update(k0, v0)
    cache.update(k1, v1)
    assert torch.equal(first_k, k0)


def test_cache_with_gradients_concatenates_and_backpropagates():
    cache = attn.KVCache()
    (k0, v0), (k1, v1) = steps(lengths=(2, 3))
    k0.requires_grad_()
    cache.update(k0, v0)
    k, _ = cache.update(k1, v1)
    k.sum().backward()
    assert torch.equal(k0.grad, torch.ones_like(k0))


def test_cache_rejects_a_different_head_width_naming_the_argument_and_both_shapes():
    cache = attn.KVCache()
    cache.update(torch.zeros(1, 2, 3, 4), torch.zeros(1, 2, 3, 4))
    with pytest.raises(ValueError, match=r"k has head width 8 \(shape \(1, 2, 1, 8\)\).*cached k has 4 \(shape \(1, 2, 3, 4\)\)"):
        cache.update(torch.zeros(1, 2, 1, 8), torch.zeros(1, 2, 1, 4))
    with pytest.raises(ValueError, match=r"v has head width 6 \(shape \(1, 2, 1, 6\)\).*cached v has 4"):
        cache.update(torch.zeros(1, 2, 1, 4), torch.zeros(1, 2, 1, 6))


def test_cache_rejects_keys_and_values_of_different_lengths():
    with pytest.raises(ValueError, match=r"k \(1, 2, 3, 4\) and v \(1, 2, 2, 4\)"):
        attn.KVCache().update(torch.zeros(1, 2, 3, 4), torch.zeros(1, 2, 2, 4))


def test_cache_rejects_a_bad_capacity():
    with pytest.raises(ValueError, match="capacity"):
        attn.KVCache(capacity=0)


def test_static_cache_keeps_what_it_was_given():
    cache = attn.KVCache(static=True)
    k, v = torch.zeros(1, 2, 7, 4), torch.ones(1, 2, 7, 4)
    ck, cv = cache.update(k, v)
    assert ck is k and cv is v and len(cache) == 7


def test_generation_with_cache_gives_the_tokens_of_recomputation():
    torch.manual_seed(0)
    model = attn.models.TokenModel(32, d_model=16, num_heads=2, num_layers=1, is_causal=True, max_len=128).eval()
    prompt = torch.randint(0, 32, (2, 5), generator=torch.Generator().manual_seed(1))
    assert torch.equal(model.generate(prompt, 70, use_cache=True), model.generate(prompt, 70, use_cache=False))
