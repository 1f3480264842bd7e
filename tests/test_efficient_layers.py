"""attn.efficient.EfficientSelfAttention and swap_attention: the attention return convention and
finding attention by type (issue 19, items 2 and 3)."""

import pytest
import torch
from torch import nn
from torch.testing import assert_close

import attn
from attn import efficient as ef


def _model(num_layers=2):
    torch.manual_seed(0)
    return attn.models.TokenModel(20, d_model=16, num_heads=2, num_layers=num_layers, max_len=12).eval()


class _NotAttention(nn.Module):
    """A module that happens to have ``in_proj`` and ``out_proj`` (e.g. a gated MLP): not attention."""

    def __init__(self):
        super().__init__()
        self.in_proj, self.out_proj = nn.Linear(16, 48), nn.Linear(16, 16)

    def forward(self, x, **_):
        return self.out_proj(self.in_proj(x)[..., :16]), None


def test_swap_attention_finds_attention_by_type_not_by_an_in_proj_attribute():
    model = _model()
    model.layers[1].self_attn = _NotAttention()
    ef.swap_attention(model, "tiled")
    assert isinstance(model.layers[0].self_attn, ef.EfficientSelfAttention)
    assert isinstance(model.layers[1].self_attn, _NotAttention)  # left alone: not one of the attention types


def test_swap_attention_swaps_an_already_swapped_model_again():
    model = _model(1)
    tokens = torch.randint(0, 20, (2, 12))
    expected = model(tokens)
    ef.swap_attention(ef.swap_attention(model, "tiled"), "full")
    assert model.layers[0].self_attn.kind == "full"
    assert_close(model(tokens), expected, atol=1e-5, rtol=1e-5)


def test_swap_attention_on_a_model_without_attention_is_a_clear_error():
    with pytest.raises(ValueError, match=r"found no self-attention \(MultiHeadAttention or EfficientSelfAttention\)"):
        ef.swap_attention(nn.Sequential(nn.Linear(4, 4)), "full")


def test_full_kind_returns_the_weights_of_multi_head_attention():
    torch.manual_seed(0)
    mha = attn.MultiHeadAttention(16, 2).eval()
    eff = ef.EfficientSelfAttention(16, 2, "full").eval()
    eff.load_state_dict(mha.state_dict())
    x = torch.randn(2, 7, 16)
    for average in (True, False):
        out, w = eff(x, is_causal=True, need_weights=True, average_weights=average)
        r_out, r_w = mha(x, is_causal=True, need_weights=True, average_weights=average)
        assert_close(out, r_out, atol=1e-5, rtol=1e-5)
        assert_close(w, r_w, atol=1e-6, rtol=1e-5)


@pytest.mark.parametrize("kind,kwargs", [("tiled", {}), ("window", {"window": 2}), ("linear", {}),
                                         ("linformer", {"rank": 4, "seq_len": 7})])
def test_kernels_without_weights_refuse_need_weights_by_name(kind, kwargs):
    m = ef.EfficientSelfAttention(16, 2, kind, **kwargs)
    out, w = m(torch.randn(1, 7, 16))
    assert out.shape == (1, 7, 16) and w is None
    with pytest.raises(ValueError, match=rf"kind={kind!r}\) computes no attention weights.*need_weights=True"):
        m(torch.randn(1, 7, 16), need_weights=True)


def test_an_unknown_keyword_is_not_swallowed():
    with pytest.raises(TypeError, match="need_weight"):
        ef.EfficientSelfAttention(16, 2)(torch.randn(1, 3, 16), need_weight=True)


@pytest.mark.parametrize("num_kv_heads", [4, 2, 1])
def test_grouped_query_weights_are_those_of_multi_head_attention_with_the_shared_keys(num_kv_heads):
    """GroupedQueryAttention follows the return convention: with need_weights=True its weights are
    those of a MultiHeadAttention whose K/V heads are the grouped ones, repeated."""
    torch.manual_seed(0)
    mha = attn.MultiHeadAttention(16, 4).eval()
    gqa = ef.GroupedQueryAttention.from_multi_head(mha, num_kv_heads=num_kv_heads).eval()
    x = torch.randn(2, 6, 16)
    out, w = gqa(x, is_causal=True, need_weights=True, average_weights=False)  # (B, H, L, S)
    assert_close(out, gqa(x, is_causal=True)[0], atol=1e-5, rtol=1e-5)
    with torch.no_grad():  # the MultiHeadAttention with the grouped keys/values copied into every head
        E, g = 4, 4 // num_kv_heads
        kv = gqa.kv_proj.weight.view(2, num_kv_heads, E, 16).repeat_interleave(g, dim=1).reshape(2, 16, 16)
        kv_b = gqa.kv_proj.bias.view(2, num_kv_heads, E).repeat_interleave(g, dim=1).reshape(2, 16)
        mha.in_proj.weight.copy_(torch.cat([gqa.q_proj.weight, kv[0], kv[1]]))
        mha.in_proj.bias.copy_(torch.cat([gqa.q_proj.bias, kv_b[0], kv_b[1]]))
    r_out, r_w = mha(x, is_causal=True, need_weights=True, average_weights=False)
    assert_close(w, r_w, atol=1e-6, rtol=1e-5)
    assert_close(out, r_out, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("kind,kwargs", [("longformer", {"window": 2, "global_tokens": (0,)}),
                                         ("strided", {"window": 2, "stride": 3}),
                                         ("lsh", {"num_buckets": 2, "chunk_size": 4})])
def test_sparse_kinds_run_and_refuse_need_weights_by_name(kind, kwargs):
    m = ef.EfficientSelfAttention(16, 2, kind, **kwargs)
    out, w = m(torch.randn(1, 7, 16))
    assert out.shape == (1, 7, 16) and w is None
    with pytest.raises(ValueError, match=rf"kind={kind!r}\) computes no attention weights"):
        m(torch.randn(1, 7, 16), need_weights=True)
    assert all(f"{name}=" in repr(m) for name in kwargs)


@pytest.mark.parametrize("kind,kwargs", [("longformer", {"window": 12, "global_tokens": (0, 3)}),
                                         ("strided", {"window": 2, "stride": 1})])
def test_sparse_kinds_that_cover_every_pair_give_the_model_its_original_output(kind, kwargs):
    model = _model(2)
    tokens = torch.randint(0, 20, (2, 12))
    expected = model(tokens)
    ef.swap_attention(model, kind, **kwargs)
    assert_close(model(tokens), expected, atol=1e-5, rtol=1e-5)


def test_lsh_kind_shares_queries_and_keys_and_draws_fresh_rotations_only_in_training():
    torch.manual_seed(0)
    m = ef.EfficientSelfAttention(16, 2, "lsh", num_buckets=4, chunk_size=3, num_hashes=2).eval()
    x = torch.randn(2, 12, 16)
    q, _, v = (t.view(2, 12, 2, 8).transpose(1, 2) for t in m.in_proj(x).chunk(3, dim=-1))
    z = ef.lsh_attention(q, v, num_buckets=4, chunk_size=3, num_hashes=2)  # rotations of seed 0
    assert_close(m(x)[0], m.out_proj(z.transpose(1, 2).reshape(2, 12, 16)))
    m.train()
    assert not torch.equal(m(x)[0], m(x)[0])  # a new hash at every training step, as Reformer's


@pytest.mark.parametrize("kind,kwargs,missing", [("longformer", {"window": 2}, "global_tokens="),
                                                 ("strided", {"window": 2}, "stride="),
                                                 ("lsh", {"chunk_size": 2}, "num_buckets=")])
def test_sparse_kinds_name_a_missing_argument(kind, kwargs, missing):
    with pytest.raises(ValueError, match=f"kind={kind!r} needs {missing}"):
        ef.EfficientSelfAttention(16, 2, kind, **kwargs)


def test_longformer_kind_refuses_causal_masking():
    m = ef.EfficientSelfAttention(16, 2, "longformer", window=2, global_tokens=(0,))
    with pytest.raises(ValueError, match="cannot be causal"):
        m(torch.randn(1, 7, 16), is_causal=True)
