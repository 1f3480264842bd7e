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


def test_a_new_cache_holds_no_keys_and_no_values():
    cache = attn.KVCache()
    assert cache.k is None and cache.v is None and len(cache) == 0


def test_cache_rejects_values_of_another_rank_than_the_keys():
    """k and v are both (B, H, S_new, E): a 3-D v whose first three sizes happen to equal k's is refused."""
    with pytest.raises(ValueError, match=r"k and v must be \(B, H, S_new, E\).*got k \(1, 2, 3, 4\) and v \(1, 2, 3\)"):
        attn.KVCache().update(torch.zeros(1, 2, 3, 4), torch.zeros(1, 2, 3))
    with pytest.raises(ValueError, match=r"got k \(1, 2, 3\) and v \(1, 2, 3, 4\)"):
        attn.KVCache().update(torch.zeros(1, 2, 3), torch.zeros(1, 2, 3, 4))


@pytest.mark.parametrize("first, rows", [(10, 64), (40, 80)])
def test_a_default_cache_allocates_twice_the_first_length_and_at_least_64_rows(first, rows):
    """The documented default capacity, and the doubling: a buffer is replaced only when it is full,
    by one of twice the length it must hold."""
    (k0, v0), (k1, v1) = steps(B=1, H=2, E=4, Ev=4, lengths=(first, 1))
    cache = attn.KVCache()
    cache.update(k0, v0)
    row = 1 * 2 * 4 * 4  # bytes of one cached position: B * H * E float32 numbers
    assert cache.k.untyped_storage().nbytes() == rows * row
    ptr = cache.k.untyped_storage().data_ptr()
    for _ in range(rows - first):  # fill the buffer: no new allocation
        cache.update(k1, v1)
    assert cache.k.untyped_storage().data_ptr() == ptr and len(cache) == rows
    cache.update(k1, v1)  # one row more than it holds: twice the new length
    assert cache.k.untyped_storage().nbytes() == 2 * (rows + 1) * row
    assert torch.equal(cache.k[..., :first, :], k0) and torch.equal(cache.v[..., -1:, :], v1)


def test_a_capacity_equal_to_the_first_length_is_allocated_exactly():
    cache = attn.KVCache(capacity=5)
    k = torch.randn(1, 2, 5, 4)
    cache.update(k, k)
    assert cache.k.untyped_storage().nbytes() == 5 * 2 * 4 * 4  # (B, H, capacity, E) of float32


@pytest.mark.parametrize("with_grad", ["k", "v"])
def test_training_through_a_cache_when_only_keys_or_only_values_carry_gradients(with_grad):
    """Each step's attention saves that step's keys and values for backward; a later update must not
    overwrite them in place, even when only one of the two requires gradients."""
    (k0, v0), (k1, v1) = steps(lengths=(3, 1), Ev=4)
    q0, q1 = torch.randn(2, 3, 3, 4), torch.randn(2, 3, 1, 4)
    for t in (k0, k1) if with_grad == "k" else (v0, v1):
        t.requires_grad_()

    def loss(update):
        ka, va = update(k0, v0)
        first = torch.softmax(q0 @ ka.mT, -1) @ va  # (B, H, 3, E): saves ka and va for backward
        kb, vb = update(k1, v1)
        return first.square().sum() + (torch.softmax(q1 @ kb.mT, -1) @ vb).square().sum()

    leaves = (k0, k1) if with_grad == "k" else (v0, v1)
    got = torch.autograd.grad(loss(attn.KVCache().update), leaves)
    seen = []

    def concatenate(k, v):  # the reference: a cache that concatenates
        seen.append((k, v))
        return torch.cat([s[0] for s in seen], -2), torch.cat([s[1] for s in seen], -2)

    expected = torch.autograd.grad(loss(concatenate), leaves)
    for g, e in zip(got, expected, strict=True):
        torch.testing.assert_close(g, e)
