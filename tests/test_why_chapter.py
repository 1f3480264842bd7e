"""What the "Why attention" chapter relies on: the long-range tasks put the answer where they say;
the stored long-range results are complete, shipped with the package and reproducible from the
script; a recurrent layer's autograd graph grows with the length while attention's does not; the
gradient from far back vanishes through a recurrence at initialisation and not through attention;
the path-length formulas for convolutions match what a stack of convolutions reaches."""

import math

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import attn
from scripts import long_range


def _results() -> dict:
    return attn.efficient.measured("long_range")


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
    root = long_range.OUT.parents[2]
    assert long_range.OUT == root / "benchmarks" / "measured" / "long_range.json"
    assert "benchmarks" in (root / "setup.py").read_text() and "graft benchmarks/measured" in (root / "MANIFEST.in").read_text()
    assert attn.efficient.results.MEASURED.resolve() == long_range.OUT.parent


def test_one_stored_run_is_reproduced_by_the_script():
    torch.set_num_threads(1)
    stored = next(r for r in _results()["runs"] if (r["model"], r["task"], r["n"], r["seed"]) == ("LSTM", "far", 8, 0))
    again = long_range.run("LSTM", "far", 8, 0, steps=_results()["meta"]["steps"])
    assert again["parameters"] == stored["parameters"]
    assert abs(again["accuracy"] - stored["accuracy"]) <= 0.02  # same seeds; other hardware may differ a little


def _depth(out: torch.Tensor) -> int:
    depth, stack = {}, [(out.grad_fn, False)]
    while stack:
        node, expanded = stack.pop()
        if node in depth:
            continue
        parents = [p for p, _ in node.next_functions if p is not None]
        if expanded:
            depth[node] = 1 + max((depth[p] for p in parents), default=0)
        else:
            stack.append((node, True))
            stack.extend((p, False) for p in parents if p not in depth)
    return depth[out.grad_fn]


def test_gru_graph_grows_linearly_with_length_attention_graph_does_not():
    gru, mha = nn.GRU(8, 8, batch_first=True), attn.MultiHeadAttention(8, 2)
    g = [_depth(gru(torch.randn(1, n, 8, requires_grad=True))[0]) for n in (4, 8, 16)]
    a = [_depth(mha(torch.randn(1, n, 8, requires_grad=True))[0]) for n in (4, 8, 16)]
    assert g[2] - g[1] == 2 * (g[1] - g[0]) > 0
    assert a[0] == a[1] == a[2]


def test_gradient_from_far_back_vanishes_through_a_recurrence_not_through_attention():
    torch.manual_seed(0)
    n, d = 64, 16
    for layer, far_over_near in ((nn.GRU(d, d, batch_first=True), lambda r: r < 1e-6),
                                 (attn.MultiHeadAttention(d, 2), lambda r: 0.1 < r < 10)):
        layer = layer.double()
        x = torch.randn(1, n, d, dtype=torch.float64, requires_grad=True)
        layer(x)[0][0, -1].sum().backward()
        g = x.grad[0].norm(dim=-1).flip(0)  # distance from the last position
        assert far_over_near((g[n - 1] / g[1]).item()), (type(layer).__name__, (g[n - 1] / g[1]).item())


@pytest.mark.parametrize("kernel,dilated,distance", [(3, False, 20), (2, True, 20), (3, True, 30), (4, False, 9)])
def test_convolution_stack_reaches_as_far_as_the_path_length_formula_says(kernel, dilated, distance):
    torch.manual_seed(0)
    x = torch.randn(1, 2, distance + 1, requires_grad=True)
    h, depth = x, 0
    while True:
        dil = kernel**depth if dilated else 1
        h = torch.tanh(nn.Conv1d(2, 2, kernel, dilation=dil)(F.pad(h, ((kernel - 1) * dil, 0))))
        depth += 1
        (g,) = torch.autograd.grad(h[0, :, -1].sum(), x, retain_graph=True)
        if g[0, :, 0].abs().sum() > 0:
            break
    # contiguous: each layer reaches kernel - 1 further; dilated: the reach multiplies by the kernel
    expected = math.ceil(distance / (kernel - 1)) if not dilated else next(
        depth for depth in range(1, 64) if kernel**depth >= distance + 1)  # integer log, no rounding
    assert depth == expected
