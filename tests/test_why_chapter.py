"""What the "Why attention" chapter relies on: the long-range tasks put the answer where they say;
the stored long-range results are complete, shipped with the package and reproducible from the
script; a recurrent layer's autograd graph grows with the length while attention's does not; the
gradient from far back vanishes through a recurrence at initialisation and not through attention;
the path-length formulas for convolutions match what a stack of convolutions reaches."""

import math
import pathlib

import pytest
import torch
from torch.testing import assert_close
from torch import nn

import attn
from scripts import long_range


def _results() -> dict:
    return attn.book.results.measured("long_range")


@pytest.mark.parametrize("n", [5, 8, 33])
def test_far_task_asks_for_the_first_token_and_near_task_for_the_token_three_before_the_end(n):
    tokens, target = long_range.batch("far", n, 50, seed=3)
    assert tokens.shape == (50, n) and torch.equal(target, tokens[:, 0])
    assert long_range.distance("far", n) == n - 1
    tokens, target = long_range.batch("near", n, 50, seed=3)
    assert torch.equal(target, tokens[:, n - 1 - long_range.DISTANCE_NEAR])
    assert long_range.distance("near", n) == long_range.DISTANCE_NEAR
    # the target is a real function of the input: changing that one token changes the answer
    assert tokens.max() < long_range.VOCAB and tokens.unique().numel() > 1


def test_long_range_batch_rejects_an_unknown_task_and_a_too_short_sequence():
    with pytest.raises(ValueError, match="task must be"):
        long_range.batch("middle", 8, 2, seed=0)
    with pytest.raises(ValueError, match="n must exceed"):
        long_range.batch("near", 3, 2, seed=0)


def test_stored_results_cover_every_model_task_length_with_at_least_three_seeds():
    runs = _results()["runs"]
    for model in long_range.MODELS:
        for task in ("far", "near"):
            for n in long_range.LENGTHS:
                seeds = {r["seed"] for r in runs if (r["model"], r["task"], r["n"]) == (model, task, n)}
                assert len(seeds) >= 3, (model, task, n, seeds)
    assert all(0.0 <= r["accuracy"] <= 1.0 and r["train_seconds"] > 0 and r["train_cpu_seconds"] > 0 for r in runs)


def test_models_compared_have_similar_parameter_counts():
    counts = {name: long_range.parameters(make()) for name, make in long_range.MODELS.items()}
    assert max(counts.values()) / min(counts.values()) < 1.25, counts
    assert {r["model"]: r["parameters"] for r in _results()["runs"]} == counts


def test_results_ship_with_the_package():
    """The script writes outside src/, into the folder the build copies into the package (setup.py;
    tests/test_fresh_env.py checks an install has it), and a checkout reads it there."""
    root = pathlib.Path(__file__).resolve().parents[1]
    assert attn.book.results.stored(long_range.OUT, {}) == root / "benchmarks" / "measured" / "long_range.json"
    assert "benchmarks" in (root / "setup.py").read_text() and "graft benchmarks/measured" in (root / "MANIFEST.in").read_text()


def test_one_stored_run_is_reproduced_by_the_script():
    torch.set_num_threads(1)
    stored = next(r for r in _results()["runs"] if (r["model"], r["task"], r["n"], r["seed"]) == ("LSTM", "far", 8, 0))
    again = long_range.run("LSTM", "far", 8, 0, steps=_results()["meta"]["steps"])
    assert again["parameters"] == stored["parameters"]
    assert abs(again["accuracy"] - stored["accuracy"]) <= 0.02  # same seeds; other hardware may differ a little


def test_gru_graph_grows_linearly_with_length_attention_graph_does_not():
    gru, mha = nn.GRU(8, 8, batch_first=True), attn.MultiHeadAttention(8, 2)
    g = [attn.book.why_attention.autograd_depth(gru(torch.randn(1, n, 8, requires_grad=True))[0]) for n in (4, 8, 16)]
    a = [attn.book.why_attention.autograd_depth(mha(torch.randn(1, n, 8, requires_grad=True))[0]) for n in (4, 8, 16)]
    assert g[2] - g[1] == 2 * (g[1] - g[0]) > 0
    assert a[0] == a[1] == a[2]


def test_gradient_from_far_back_vanishes_through_a_recurrence_not_through_attention():
    n, d = 64, 16
    for make, far_over_near in ((lambda: nn.GRU(d, d, batch_first=True), lambda r: r < 1e-6),
                                (lambda: attn.MultiHeadAttention(d, 2), lambda r: 0.1 < r < 10)):
        g = attn.book.why_attention.gradient_by_distance(make, n, d, seed=0)  # distance from the last position
        assert g.shape == (n,) and g.dtype == torch.float64
        assert far_over_near((g[n - 1] / g[1]).item()), (type(make()).__name__, (g[n - 1] / g[1]).item())


def test_gradient_by_distance_matches_autograd_by_hand():
    torch.manual_seed(3)
    layer = nn.GRU(4, 4, batch_first=True).double()
    x = torch.randn(1, 6, 4, dtype=torch.float64, requires_grad=True)
    u = torch.randn(4, dtype=torch.float64)
    (layer(x)[0][0, -1] @ u).backward()
    by_hand = x.grad[0].norm(dim=-1)  # (6,) from the first position to the last
    g = attn.book.why_attention.gradient_by_distance(lambda: nn.GRU(4, 4, batch_first=True), 6, 4, seed=3)
    assert_close(g, by_hand.flip(0))


@pytest.mark.parametrize("kernel,dilated,distance", [(3, False, 20), (2, True, 20), (3, True, 30), (4, False, 9)])
def test_convolution_stack_reaches_as_far_as_the_path_length_formula_says(kernel, dilated, distance):
    depth = attn.book.why_attention.layers_to_reach(distance, kernel, dilated, width=2)
    # contiguous: each layer reaches kernel - 1 further; dilated: the reach multiplies by the kernel
    expected = math.ceil(distance / (kernel - 1)) if not dilated else next(
        depth for depth in range(1, 64) if kernel**depth >= distance + 1)  # integer log, no rounding
    assert depth == expected


def test_layer_times_times_every_layer_length_and_kind():
    layers = {"GRU": nn.GRU(4, 4, batch_first=True), "attention": attn.MultiHeadAttention(4, 2)}
    for clock in ("wall", "process"):
        times = attn.book.why_attention.layer_times(layers, [3, 5], batch=2, width=4, min_run_time=0, clock=clock)
        assert set(times) == {(name, n, kind) for name in layers for n in (3, 5) for kind in ("fwd", "fwd+bwd")}
        assert all(t > 0 for t in times.values())
    with pytest.raises(ValueError, match="clock"):
        attn.book.why_attention.layer_times(layers, [3], batch=1, width=4, min_run_time=0, clock="sundial")


def test_additive_attention_follows_its_formula_and_gives_no_weight_to_padding():
    torch.manual_seed(0)
    att = attn.book.why_attention.AdditiveAttention(3, 5, 4)
    s, h = torch.randn(2, 3), torch.randn(2, 6, 5)
    key_mask = torch.tensor([[True] * 6, [True] * 4 + [False] * 2])
    c, alpha = att(s, h, key_mask)
    e = torch.stack([torch.stack([att.v.weight[0] @ torch.tanh(att.W.weight @ s[b] + att.U.weight @ h[b, j] + att.U.bias)
                                  for j in range(6)]) for b in range(2)])  # (B, S): e_bj written out
    expected = torch.softmax(e.masked_fill(~key_mask, float("-inf")), -1)
    assert_close(alpha, expected)
    assert (alpha[1, 4:] == 0).all()
    assert_close(c, torch.einsum("bs,bsk->bk", expected, h))


def test_bahdanau_model_on_dates_gives_distributions_over_real_characters_and_a_loss():
    from attn.book.data import DateTask
    from attn.book.cross_attention import alignment_scores
    from attn.book.why_attention import BahdanauSeq2Seq, date_training_batch, seq2seq_date_loss

    task = DateTask()
    src, tgt_in, tgt_out, key_mask = date_training_batch(task, 0, n=8)
    assert torch.equal(key_mask, src != 0) and tgt_in.shape == tgt_out.shape
    torch.manual_seed(0)
    model = BahdanauSeq2Seq(len(task.src_vocab), len(task.tgt_vocab), d=16)
    logits, alpha = model(src, tgt_in, key_mask)
    assert logits.shape == (*tgt_in.shape, len(task.tgt_vocab)) and alpha.shape == (*tgt_in.shape, src.shape[1])
    assert_close(alpha.sum(-1), torch.ones(tgt_in.shape))
    assert (alpha[~key_mask[:, None, :].expand_as(alpha)] == 0).all()
    assert seq2seq_date_loss(model, (src, tgt_in, tgt_out, key_mask)).item() > 1.0  # untrained
    # The chapter's agreement is alignment_scores' "hits" on the model's (B, T, S) weights.
    pairs = task.sample(8, seed=1)
    src, tgt_in, _, _ = task.batch(pairs)
    with torch.no_grad():
        _, alpha = model(src, tgt_in, src != 0)
    hits = alignment_scores(alpha[:, None], pairs, task)["hits"]
    assert hits.shape == (1,) and 0 <= hits.item() <= 1


def test_long_range_rows_summarise_the_stored_runs():
    runs = _results()["runs"]
    rows = attn.book.why_attention.long_range_rows(runs)
    assert len(rows) == 2 * len({r["n"] for r in runs})
    task, n = rows[0][0], rows[0][1]
    acc = attn.book.why_attention.long_range_values(runs, "Transformer", task, n, "accuracy")
    assert len(acc) >= 3 and rows[0][5].startswith(f"{sum(acc) / len(acc):.2f} [{min(acc):.2f}, ")


def test_the_stored_lstm_loses_the_far_token_well_inside_the_sources_50_to_100_words():
    # The chapter sets the source documents' "50-100 words" against these runs: the LSTM learns the
    # far token at the shortest length and is at chance from a distance below 50 on.
    runs = _results()["runs"]
    values = attn.book.why_attention.long_range_values
    lengths = sorted({r["n"] for r in runs})
    chance = runs[0]["chance"]
    mean = {n: sum(v := values(runs, "LSTM", "far", n, "accuracy")) / len(v) for n in lengths}
    assert mean[lengths[0]] > 0.95
    fail = min(n for n in lengths if mean[n] < 2 * chance)
    assert values(runs, "LSTM", "far", fail, "distance")[0] == fail - 1 < 50
