"""attn.book.widgets, Python side: the masks shown are attn.masks' masks, bad data is refused before anything
is drawn, reprs are stable, and the saved state stays small."""

import base64
import json
import pathlib

import numpy as np
import pytest
import torch
from ipywidgets.widgets import widget as ipywidget
from torch.testing import assert_close

from attn import masks
from attn.positional import sinusoidal_table
from attn.book.widgets import KINDS, AttentionExplorer, MaskExplorer, PositionalEncodingExplorer, seeded_scores, state_size_bytes
from attn.book.widgets._state import words_table

WIDGETS_DIR = pathlib.Path(__file__).resolve().parents[1] / "src" / "attn" / "book" / "widgets"


def reference_mask(kind, L, S=None, *, window=2, dilation=2, lengths=None, batch=0, global_tokens=(0,), num_random=2,
                   seed=0, prefix=3, src_lengths=None):
    """The mask each kind stands for, written directly with attn.masks (the oracle for the explorers)."""
    S = L if S is None or kind == "prefix_lm" else S
    lengths = [S, max(1, S - 3)] if lengths is None else lengths
    src_lengths = [S, max(1, S - 3)] if src_lengths is None else src_lengths
    return {
        "none": lambda: torch.ones(L, S, dtype=torch.bool),
        "causal": lambda: masks.causal(L, S),
        "padding": lambda: masks.padding(lengths, S, L=L)[batch],
        "causal+padding": lambda: (masks.causal(L, S) & masks.padding(lengths, S, L=L))[batch],
        "sliding_window": lambda: masks.sliding_window(L, S, window=window),
        "dilated": lambda: masks.dilated(L, S, window=window, dilation=dilation),
        "local_global": lambda: masks.local_global(L, S, window=window, global_tokens=global_tokens),
        "bigbird": lambda: masks.bigbird(L, S, window=window, global_tokens=global_tokens, num_random=num_random, seed=seed),
        "prefix_lm": lambda: masks.prefix_lm(L, prefix),
        "cross_padding": lambda: masks.cross_padding(src_lengths, L, S)[batch],
    }[kind]()


SETTINGS = [
    dict(L=8),
    dict(L=5, S=9, window=1, dilation=3, lengths=[9, 2, 0], batch=1, global_tokens=(0, 4), num_random=3, seed=7,
         prefix=0, src_lengths=[4, 9], ),
    dict(L=12, S=6, window=3, dilation=2, lengths=[6, 3], batch=1, global_tokens=(2,), num_random=6, seed=123456,
         prefix=12, src_lengths=[1, 6]),
    dict(L=16, window=4, dilation=1, lengths=[16, 16], global_tokens=(), num_random=0, seed=2**32 - 1, prefix=5),
    dict(L=1, S=1, window=1, lengths=[0], src_lengths=[0], global_tokens=(0,), prefix=1),
]


@pytest.mark.parametrize("settings", SETTINGS, ids=lambda s: f"L{s['L']}S{s.get('S')}")
@pytest.mark.parametrize("kind", KINDS)
def test_mask_method_equals_attn_masks_for_every_kind(kind, settings):
    w = MaskExplorer(kind, **settings)
    m = w.mask()
    assert m.dtype == torch.bool
    assert torch.equal(m, reference_mask(kind, **settings))


def test_default_explorer_is_a_causal_8_by_8_mask_with_a_stable_repr():
    w = MaskExplorer()
    assert repr(w) == "MaskExplorer(kind='causal', L=8, S=8)"
    assert torch.equal(w.mask(), masks.causal(8))
    assert repr(MaskExplorer("bigbird", 6, window=1, seed=3)) == (
        "MaskExplorer(kind='bigbird', L=6, S=6, window=1, global_tokens=[0], num_random=2, seed=3)")


def test_reprs_hold_no_memory_address():
    ws = [MaskExplorer(k, 6) for k in KINDS] + [
        AttentionExplorer(list("abc"), torch.full((2, 3, 3), 1 / 3)),
        AttentionExplorer(list("ab"), torch.full((1, 1, 2, 3), 1 / 3), key_tokens=list("xyz")),
        PositionalEncodingExplorer(max_len=8, d_model=4)]
    for w in ws:
        text = w._repr_mimebundle_()[0]["text/plain"]
        assert "0x" not in text and text == repr(w) and text.startswith(type(w).__name__ + "(")


def test_S_none_follows_L_and_prefix_lm_is_always_square():
    w = MaskExplorer("causal", 6)
    w.L = 4
    assert w.mask().shape == (4, 4)
    w = MaskExplorer("prefix_lm", 6, 9, prefix=2)
    assert w.mask().shape == (6, 6) and torch.equal(w.mask(), masks.prefix_lm(6, 2))


def test_live_changes_clamp_dependent_values_like_the_front_end():
    w = MaskExplorer("local_global", 10, global_tokens=(0, 8), lengths=[10, 7], batch=1, prefix=9)
    w.L = 5  # global token 8 no longer exists; prefix 9 > L
    assert w._params()["global_tokens"] == [0]
    assert torch.equal(w.mask(), masks.local_global(5, 5, window=2, global_tokens=[0]))
    w.kind, w.S = "padding", 4  # lengths [10, 7] exceed S = 4
    assert w._params()["lengths"] == [4, 4]
    assert torch.equal(w.mask(), masks.padding([4, 4], 4, L=5)[1])
    w.kind = "prefix_lm"
    assert torch.equal(w.mask(), masks.prefix_lm(5, 5))


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(kind="triangular"), r"kind must be one of .*'causal'.*got 'triangular'"),
        (dict(L=0), r"L must lie in \[1, 32\] \(the grid's size\), got 0"),
        (dict(L=40), r"L must lie in \[1, 32\]"),
        (dict(L=True), r"L must be an integer in \[1, 32\] \(the grid's size\), got True"),
        (dict(S=33), r"S must lie in \[1, 32\]"),
        (dict(S=4.0), r"S must be an integer in \[1, 32\].*got 4.0"),
        (dict(kind="padding", L=4, lengths=[5]), r"lengths must be a non-empty list of lengths in \[0, S=4\], got \[5\]"),
        (dict(kind="cross_padding", L=4, S=3, src_lengths=[]), r"src_lengths must be a non-empty list"),
        (dict(kind="local_global", L=4, global_tokens=(4,)), r"global_tokens \[4\] are outside \[0, min\(L, S\)\) = \[0, 4\)"),
        (dict(window=0), r"window must be a positive integer, got 0"),
        (dict(dilation=True), r"dilation must be a positive integer, got True"),
        (dict(seed=-1), r"seed must be a non-negative integer, got -1"),
        (dict(batch=False), r"batch must be a non-negative integer, got False"),
        (dict(L=3, S=4, scores=torch.zeros(4, 3)), r"scores has shape \(4, 3\), expected \(L, S\) = \(3, 4\)"),
        (dict(L=2, scores=[[0.0, float("nan")], [0.0, 0.0]]), r"scores must be finite"),
    ],
)
def test_mask_explorer_refuses_bad_arguments_naming_them(kwargs, match):
    with pytest.raises(ValueError, match=match):
        MaskExplorer(**kwargs)


def test_live_assignment_of_an_unknown_kind_is_refused():
    w = MaskExplorer()
    with pytest.raises(ValueError, match="kind must be one of"):
        w.kind = "nope"
    assert w.kind == "causal"


def test_weights_are_the_masked_softmax_and_fully_masked_rows_are_zeros_not_nan():
    w = MaskExplorer("sliding_window", 8, 3, window=2)  # queries 4..7 are past every key
    wt = w.weights()
    assert not wt.isnan().any()
    empty = masks.fully_masked_rows(w.mask()).squeeze(-1)
    assert empty.tolist() == [False] * 4 + [True] * 4
    assert (wt[empty] == 0).all()
    assert_close(wt[~empty].sum(-1), torch.ones(4, dtype=torch.float64))
    expected = torch.softmax(seeded_scores(0, 8, 3)[:4].masked_fill(~w.mask()[:4], float("-inf")), -1)
    assert_close(wt[:4], expected)


def test_seeded_scores_come_from_the_portable_stream_row_by_row():
    s = seeded_scores(5, 2, 3)
    rng = masks.seeded_uniform(5)
    assert s.tolist() == [[4 * next(rng) - 2 for _ in range(3)] for _ in range(2)]
    assert s.min() >= -2 and s.max() < 2


def test_given_scores_are_used_rounded_then_replaced_by_seeded_ones_when_the_shape_changes():
    scores = torch.tensor([[1.23456, 0.0], [2.0, -1.0]])
    w = MaskExplorer("none", 2, scores=scores)
    assert w.scores == [[1.2346, 0.0], [2.0, -1.0]]
    assert_close(w.score_matrix(), torch.tensor(w.scores, dtype=torch.float64))
    w.L = 3
    assert_close(w.score_matrix(), seeded_scores(0, 3, 3))


def test_update_sets_several_traits_at_once_and_checks_them():
    w = MaskExplorer()
    w.update(kind="dilated", L=12, window=3, dilation=2)
    assert (w.kind, w.L, w.window, w.dilation) == ("dilated", 12, 3, 2)
    assert torch.equal(w.mask(), masks.dilated(12, 12, window=3, dilation=2))
    with pytest.raises(ValueError, match="window must be a positive integer, got 0"):
        w.update(window=0)
    assert w.window == 3
    with pytest.raises(TypeError, match="unknown parameters"):
        w.update(windw=3)


def test_kinds_limits_the_selector_and_always_holds_the_kind_shown():
    assert MaskExplorer("causal", kinds=("none", "causal")).kinds == ["none", "causal"]
    assert MaskExplorer("padding", kinds=("none",)).kinds == ["none", "padding"]
    with pytest.raises(ValueError, match="kind must be one of"):
        MaskExplorer(kinds=("none", "full"))


def test_parameters_a_kind_does_not_read_are_limited_not_refused():
    w = MaskExplorer("causal", 4, lengths=[9], global_tokens=(7,))  # meaningless for "causal"
    assert w.lengths == [4] and w._params()["global_tokens"] == []
    with pytest.raises(ValueError, match="lengths must be a non-empty list"):
        MaskExplorer("causal", 4, lengths=[-1])


def test_density_is_the_fraction_of_allowed_pairs():
    assert MaskExplorer("causal", 4).density() == pytest.approx(10 / 16)
    assert MaskExplorer("none", 3, 5).density() == 1.0


# --------------------------------------------------------------------------- AttentionExplorer
def attn_weights(*shape, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.softmax(torch.randn(*shape, generator=g), dim=-1)


def test_attention_explorer_accepts_torch_numpy_3d_5d_and_per_layer_lists():
    toks = ["a", "b", "c"]
    w4 = attn_weights(2, 4, 3, 3)
    for weights, layers in [(w4, 2), (w4.numpy(), 2), (w4[0], 1), (list(w4), 2)]:
        e = AttentionExplorer(toks, weights)
        assert e.shape == (layers, 4, 3, 3)
    w5 = attn_weights(3, 2, 4, 3, 3)
    e = AttentionExplorer(toks, w5, batch_index=2)
    assert_close(e.weight_tensor(), w5[2].double(), atol=1 / 510, rtol=0)
    e = AttentionExplorer(toks, [w5[:, layer] for layer in range(2)], batch_index=1)  # Hugging Face style
    assert_close(e.weight_tensor(), w5[1].double(), atol=1 / 510, rtol=0)


def test_attention_explorer_takes_recorded_layers_by_name():
    rec = {"layers.0.self_attn": attn_weights(2, 4, 3, 3), "layers.1.self_attn": attn_weights(2, 4, 3, 3, seed=1)}  # (B, H, L, S)
    e = AttentionExplorer(list("abc"), rec, batch_index=1)
    assert e.shape == (2, 4, 3, 3) and e.layer_names == list(rec)
    assert_close(e.weight_tensor()[1], rec["layers.1.self_attn"][1].double(), atol=1 / 510, rtol=0)
    assert AttentionExplorer(list("abc"), rec["layers.0.self_attn"][0]).layer_names == []  # numbered
    with pytest.raises(ValueError, match="layer_names has 1 entries but weights has 2 layer"):
        AttentionExplorer(list("abc"), rec, layer_names=["x"])


def quantization_error_bound(w: torch.Tensor) -> torch.Tensor:
    """The documented bound per weight: half a step of the row's range, (hi - lo) / 510, plus float32 rounding."""
    w = w.double()
    span = w.amax(-1, keepdim=True) - w.amin(-1, keepdim=True)
    return span / 510 + 2.0**-23 * w.abs().amax(-1, keepdim=True)


@pytest.mark.parametrize("normalized", [True, False])
def test_attention_state_is_8_bit_per_row_within_the_stated_error(normalized):
    g = torch.Generator().manual_seed(3)
    scores = 4 * torch.randn(2, 3, 7, 9, generator=g)
    w = torch.softmax(scores, -1) if normalized else scores.exp()  # unnormalized: any range, up to e^12
    w[0, 1, 2] = 0.0  # a fully masked query: all zeros
    w[1, 0, 3, :4] = 0.0  # masked keys
    e = AttentionExplorer(list("abcdefg"), w, key_tokens=list("ABCDEFGHI"), normalized=normalized)
    st = e.weights
    assert st["scheme"] == "uint8-row-minmax" and st["shape"] == [2, 3, 7, 9]
    assert len(base64.b64decode(st["codes"])) == w.numel()  # one byte per weight
    assert len(base64.b64decode(st["lo"])) == len(base64.b64decode(st["hi"])) == 4 * 2 * 3 * 7  # float32 per row
    got = e.weight_tensor()
    err = (got - w.double()).abs()
    assert (err <= quantization_error_bound(w)).all(), err.max()
    if normalized:
        assert err.max() <= 1 / 255
    assert (got[0, 1, 2] == 0).all() and (got[1, 0, 3, :4] == 0).all()  # zeros stay exact zeros
    assert_close(got.amax(-1), w.double().amax(-1), atol=0, rtol=2.0**-23)  # each row's largest weight is exact (float32)


def test_update_without_new_weights_keeps_the_8_bit_copy():
    w = attn_weights(1, 2, 64, 64)  # row sums of the 8-bit copy are off by more than the float32 tolerance
    e = AttentionExplorer([str(i) for i in range(64)], w)
    before = dict(e.weights)
    e.update(tokens=[f"t{i}" for i in range(64)])
    assert e.weights == before and e.tokens[0] == "t0"


@pytest.mark.parametrize(
    "tokens, weights, kwargs, match",
    [
        (["a", "b"], attn_weights(1, 2, 3, 3), {}, r"tokens has 2 entries but weights has L=3 query positions \(shape \(1, 2, 3, 3\)"),
        (["a", "b", "c"], attn_weights(1, 2, 3, 4), {}, r"key_tokens \(default: tokens, i.e. self-attention\) has 3 entries but weights has S=4"),
        (["a", "b", "c"], attn_weights(2, 3, 3), dict(key_tokens=["x"]), r"key_tokens has 1 entries .* expected weights shaped \(layers, heads, L, 1\)"),
        (["a", "b", "c"], attn_weights(3, 3), {}, r"weights must have 3, 4 or 5 dimensions.*got 2 dimensions, shape \(3, 3\)"),
        (["a", "b", "c"], attn_weights(2, 1, 1, 1, 3, 3), {}, r"got 6 dimensions, shape \(2, 1, 1, 1, 3, 3\)"),
        (["a", "b", "c"], attn_weights(2, 1, 1, 3, 3), dict(batch_index=2),
         r"batch_index must lie in \[-2, 2\) \(weights of shape \(2, 1, 1, 3, 3\) hold 2 sequences\), got 2"),
        (["a", "b", "c"], attn_weights(2, 1, 1, 3, 3), dict(batch_index=True), r"batch_index must be an integer in \[-2, 2\)"),
        (["a", "b"], torch.tensor([[[0.5, float("nan")], [0.5, 0.5]]]), {}, r"weights contains NaN .* \[0, 0, 0, 1\]"),
        (["a", "b"], torch.tensor([[[1.5, -0.5], [0.5, 0.5]]]), {}, r"weights contains negative values \(min -0.5"),
        (["a", "b"], torch.tensor([[[0.5, 0.5], [0.5, 0.2]]]), {}, r"normalized=True .* row at \[layer, head, query\] = \[0, 0, 1\] sums to 0.7000"),
        ("the cat", attn_weights(1, 7, 7), {}, r"tokens must be a list of tokens, got a single string"),
        ([], torch.zeros(1, 0, 0), {}, r"tokens is empty"),
    ],
)
def test_attention_explorer_errors_name_the_argument_and_shapes(tokens, weights, kwargs, match):
    before = len(ipywidget._instances)
    with pytest.raises(ValueError, match=match):
        AttentionExplorer(tokens, weights, **kwargs)
    assert len(ipywidget._instances) == before  # refused before any widget (or view) exists


def test_fully_masked_rows_and_unnormalized_weights_are_accepted_when_meant():
    w = attn_weights(1, 2, 3, 3)
    w[0, 0, 2] = 0  # a fully masked query
    assert AttentionExplorer(list("abc"), w).shape == (1, 2, 3, 3)
    raw = torch.rand(1, 2, 3, 3) * 5
    with pytest.raises(ValueError, match="normalized=True"):
        AttentionExplorer(list("abc"), raw)
    assert AttentionExplorer(list("abc"), raw, normalized=False).normalized is False


def test_attention_explorer_options_are_checked():
    w = attn_weights(2, 3, 4, 4)
    e = AttentionExplorer(list("abcd"), w, layer=1, heads=[0, 2], view="heatmap", query=3)
    assert (e.layer, e.heads, e.view, e.query) == (1, [True, False, True], "heatmap", 3)
    with pytest.raises(ValueError, match=r"layer must lie in \[-2, 2\) \(weights has 2 layer\(s\)\), got 2"):
        AttentionExplorer(list("abcd"), w, layer=2)
    with pytest.raises(ValueError, match=r"heads\[1\] must lie in \[0, 3\) \(a head index\), got 5"):
        AttentionExplorer(list("abcd"), w, heads=[0, 5])
    with pytest.raises(ValueError, match=r"query must lie in \[0, 4\) \(weights has 4 query tokens\), got 4"):
        AttentionExplorer(list("abcd"), w, query=4)
    with pytest.raises(ValueError, match=r"query must be an integer in \[0, 4\).*got True"):
        AttentionExplorer(list("abcd"), w, query=True)
    with pytest.raises(ValueError, match="view must be one of"):
        AttentionExplorer(list("abcd"), w, view="pie")
    with pytest.raises(ValueError, match="view must be one of"):
        e.view = "pie"


def test_update_replaces_the_data_live_and_checks_it_first():
    e = AttentionExplorer(list("abc"), attn_weights(1, 2, 3, 3), query=2)
    e.update(tokens=list("wxyz"), weights=attn_weights(2, 3, 4, 4, seed=1))
    assert e.tokens == list("wxyz") and e.key_tokens == list("wxyz")  # self-attention: keys follow
    assert e.shape == (2, 3, 4, 4) and len(e.heads) == 3 and e.query == 2
    e.update(tokens=list("pq"), weights=attn_weights(1, 1, 2, 4, seed=2), key_tokens=list("klmn"))
    assert (e.tokens, e.key_tokens, e.query, e.layer) == (list("pq"), list("klmn"), -1, 0)
    assert repr(e) == "AttentionExplorer(cross-attention, layers=1, heads=1, L=2, S=4, view='lines')"
    before = e.get_state()
    with pytest.raises(ValueError, match="tokens has 3 entries but weights has L=2"):
        e.update(tokens=list("abc"))
    assert e.get_state() == before  # nothing half-applied


# --------------------------------------------------------------------------- PositionalEncodingExplorer
def test_positional_explorer_default_table_is_sinusoidal_64_by_32():
    p = PositionalEncodingExplorer()
    assert p.encoding == "sinusoidal" and list(p.encodings) == ["sinusoidal"]
    assert_close(p.table(), sinusoidal_table(64, 32), atol=6e-5, rtol=0)  # state is rounded to 4 decimals
    assert repr(p) == "PositionalEncodingExplorer(encodings=['sinusoidal'], shown='sinusoidal', shape=(64, 32))"


def test_positional_explorer_takes_any_tables_by_name():
    learned = torch.randn(10, 6)
    p = PositionalEncodingExplorer(encodings={"sinusoidal": sinusoidal_table(10, 6), "learned": learned}, encoding="learned")
    assert p.encoding == "learned"
    assert_close(p.table(), learned, atol=5e-5, rtol=0)
    q = PositionalEncodingExplorer(np.eye(4), position=3, pair=1)
    assert list(q.encodings) == ["table"] and (q.position, q.pair) == (3, 1)


def test_positional_similarity_is_the_dot_product_with_every_other_position():
    p = PositionalEncodingExplorer(max_len=16, d_model=8, position=5)
    k, dots = p.similarity()
    T = p.table().double()
    assert k.tolist() == list(range(-5, 11))
    assert_close(dots, T @ T[5])
    assert dots[5] == pytest.approx(4.0, abs=1e-3)  # |PE[p]|^2 = D / 2 for the sinusoidal table


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(table=torch.zeros(3)), r"encodings\['table'\] must have shape \(positions, D\), got \(3\)"),
        (dict(encodings={"x": torch.full((2, 2), float("inf"))}), r"encodings\['x'\] contains NaN or infinite"),
        (dict(encodings={}), r"encodings must be a non-empty mapping"),
        (dict(position=64), r"position must lie in \[0, 64\) \(a row of the 'sinusoidal' table of shape \(64, 32\)\), got 64"),
        (dict(pair=16), r"pair must lie in \[0, 16\) \(a sin/cos pair of the 'sinusoidal' table, D=32\), got 16"),
        (dict(pair=True), r"pair must be an integer in \[0, 16\).*got True"),
        (dict(table=torch.zeros(2, 2), encodings={"a": torch.zeros(2, 2)}), "either table or encodings"),
    ],
)
def test_positional_explorer_refuses_bad_tables(kwargs, match):
    with pytest.raises(ValueError, match=match):
        PositionalEncodingExplorer(**kwargs)


def test_positional_tables_keep_the_order_given_even_where_json_sorts_keys():
    tables = {"sinusoidal": sinusoidal_table(8, 4), "learned": torch.zeros(8, 4), "ALiBi-free": sinusoidal_table(8, 4, 100.0)}
    p = PositionalEncodingExplorer(encodings=tables)
    assert p.names == list(tables) and p.encoding == "sinusoidal"
    saved = json.loads(json.dumps(p.get_state(), sort_keys=True))  # as a saved notebook stores it
    assert list(saved["encodings"]) != list(tables) and saved["names"] == list(tables)
    p.update(encodings={"b": torch.zeros(8, 4), "a": torch.ones(8, 4)})
    assert p.names == ["b", "a"]


def test_positional_update_keeps_position_and_pair_where_they_fit():
    p = PositionalEncodingExplorer(position=40, pair=10)
    p.update(torch.randn(20, 8), name="learned")
    assert (p.encoding, p.position, p.pair) == ("learned", 19, 3)
    assert p.table().shape == (20, 8)


# --------------------------------------------------------------------------- state: serialisable and small
STANDARD = {
    "mask 16x16 bigbird": lambda: MaskExplorer("bigbird", 16),
    "mask 16x16 given scores": lambda: MaskExplorer("causal", 16, scores=torch.randn(16, 16)),
    "attention 2 layers x 4 heads x 12 x 12": lambda: AttentionExplorer([f"tok{i}" for i in range(12)], attn_weights(2, 4, 12, 12)),
    "positional 64 x 32": lambda: PositionalEncodingExplorer(),
}


@pytest.mark.parametrize("name", STANDARD)
def test_standard_examples_have_small_json_serialisable_state(name):
    w = STANDARD[name]()
    state = w.get_state()
    text = json.dumps(state)  # raises if anything is not JSON
    assert state_size_bytes(w) == len(json.dumps(state, separators=(",", ":"), ensure_ascii=False).encode())
    assert len(text) > 1000 and state_size_bytes(w) < 200_000


def test_state_size_grows_with_the_data():
    small = state_size_bytes(AttentionExplorer(list("ab"), attn_weights(1, 1, 2, 2)))
    big = state_size_bytes(AttentionExplorer([str(i) for i in range(12)], attn_weights(2, 4, 12, 12)))
    assert big - small > 2 * 4 * 12 * 12  # at least a byte per weight


def test_a_64_token_4_layer_8_head_view_is_under_250_kb():
    """The largest view the book plans (the variants chapter): 131,072 weights in at most 250 KB of state."""
    tokens = [f"token{i}" for i in range(64)]
    w = attn_weights(4, 8, 64, 64)
    e = AttentionExplorer(tokens, w, layer_names=[f"layer {n}" for n in range(4)])
    size = state_size_bytes(e)
    assert size <= 250_000, size
    per_weight = (size - state_size_bytes(AttentionExplorer(["a"], torch.ones(1, 1, 1)))) / w.numel()
    assert per_weight < 1.55, per_weight  # base64: 4/3 byte per weight, plus 2 float32 per row of 64 (1/6 byte)
    assert_close(e.weight_tensor(), w.double(), atol=1 / 255, rtol=0)


def test_front_end_files_are_package_data():
    import fnmatch
    import tomllib

    patterns = tomllib.loads((WIDGETS_DIR.parents[3] / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]["attn.book"]
    for f in [*WIDGETS_DIR.glob("*.js"), *WIDGETS_DIR.glob("*.css"), *WIDGETS_DIR.glob("*.json")]:
        rel = f.relative_to(WIDGETS_DIR.parent).as_posix()  # e.g. widgets/mask_explorer.js
        assert any(fnmatch.fnmatch(rel, p) for p in patterns), rel


@pytest.mark.parametrize("cls, js", [(MaskExplorer, "mask_explorer.js"), (AttentionExplorer, "attention_explorer.js"),
                                     (PositionalEncodingExplorer, "positional_explorer.js")])
def test_front_end_source_travels_in_the_state_and_is_compact(cls, js):
    source = (WIDGETS_DIR / "_dom.js").read_text() + "\n" + (WIDGETS_DIR / js).read_text()  # shared DOM helpers first
    source = words_table(source) + source  # and, in front of all, the Chinese of its words (tests/test_widget_words.py)
    w = {MaskExplorer: MaskExplorer, AttentionExplorer: lambda: AttentionExplorer(["a"], torch.ones(1, 1, 1)),
         PositionalEncodingExplorer: lambda: PositionalEncodingExplorer(max_len=4, d_model=4)}[cls]()
    state = w.get_state()
    assert state["_esm"] == source  # the files' text, not a path: the static site needs no file server
    assert state["_css"] == (WIDGETS_DIR / "widgets.css").read_text()
    assert len(source.encode()) < 40_000
