"""The applications chapter's measurements: integer quantisation against its error bound and
against PyTorch's own per-channel quantiser, pruning, the forecasting toy and its stored results."""

import pytest
import torch

from attn.book import applications as ap
from attn.book import pretraining, results


@pytest.mark.parametrize("bits", [8, 4, 2])
def test_round_trip_error_is_at_most_half_a_step(bits):
    w = torch.randn(16, 40, generator=torch.Generator().manual_seed(bits)) * torch.logspace(-2, 1, 16)[:, None]
    q, s = ap.quantize(w, bits)
    qmax = 2 ** (bits - 1) - 1
    assert q.dtype == torch.int8 and s.shape == (16, 1)
    assert int(q.abs().max()) <= qmax
    assert torch.all((w - ap.dequantize(q, s)).abs() <= s / 2 * (1 + 1e-6))
    assert torch.equal(q.abs().amax(1), torch.full((16,), qmax, dtype=torch.int8))  # each row's largest hits qmax


@pytest.mark.filterwarnings("ignore:torch.quantize_per_tensor")
def test_int8_matches_torch_quantize_per_channel():
    w = pretraining.load("gpt")[0].layers[0].ff.linear1.weight.detach()  # (256, 64)
    q, s = ap.quantize(w, 8)
    ref = torch.quantize_per_channel(w, s[:, 0].double(), torch.zeros(len(s), dtype=torch.long), 0, torch.qint8)
    diff = (q.int() - ref.int_repr().int()).abs()
    assert int(diff.max()) <= 1 and diff.float().mean() < 1e-3  # only exact ties may round the other way
    torch.testing.assert_close(ap.dequantize(q, s), ref.dequantize(), atol=float(s.max()), rtol=0)


def test_pencil_row_quantises_to_whole_steps():
    q, s = ap.quantize(torch.tensor([[0.5, -1.27, 0.02]]), 8)
    torch.testing.assert_close(s, torch.tensor([[0.01]]))
    assert q.tolist() == [[50, -127, 2]]


def test_the_chapter_shows_the_arithmetic_of_quantize():
    """book/applications.ipynb shows lines 1 and 21-25 of quantize (literalinclude :lines:)."""
    import inspect

    lines = inspect.getsource(ap.quantize).splitlines()
    shown = [lines[0], *lines[20:25]]
    assert shown[0].startswith("def quantize") and shown[1].strip().startswith("qmax =")
    assert shown[-1].strip() == "return q.to(torch.int8), scale" and len(lines) == 25
    assert max(map(len, shown)) <= 88


def test_zero_row_stays_zero():
    q, s = ap.quantize(torch.zeros(2, 3), 8)
    assert q.abs().sum() == 0 and torch.all(s == 1)


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="bits"):
        ap.quantize(torch.randn(2, 2), 9)
    with pytest.raises(ValueError, match="w must be a matrix"):
        ap.quantize(torch.randn(2, 2, 2))
    with pytest.raises(ValueError, match="sparsity"):
        ap.pruned(torch.nn.Linear(2, 2), 1.0)
    with pytest.raises(ValueError, match="period"):
        ap.seasonal_series(2, 5, 6)


def test_linear_layers_leave_out_the_tied_output_layer():
    gpt = pretraining.load("gpt")[0]
    names = set(ap.linear_layers(gpt))
    assert "head" not in names and len(names) == 4 * len(gpt.layers)
    assert ap.weight_bytes(gpt) == 4 * sum(m.weight.numel() for m in ap.linear_layers(gpt).values())
    assert ap.weight_bytes(gpt, 8) < ap.weight_bytes(gpt) / 3.5


def test_quantised_and_pruned_copies_leave_the_model_alone():
    gpt = pretraining.load("gpt")[0]
    before = {k: v.clone() for k, v in gpt.state_dict().items()}
    q8 = ap.quantized(gpt, 8)
    p = ap.pruned(gpt, 0.5)
    assert all(torch.equal(v, gpt.state_dict()[k]) for k, v in before.items())
    for name, layer in ap.linear_layers(p).items():
        assert int((layer.weight == 0).sum()) == layer.weight.numel() // 2, name
    assert torch.equal(q8.embed.weight, gpt.embed.weight)  # embeddings are not quantised


def test_int8_costs_the_gpt_almost_nothing_and_int2_a_lot():
    gpt = pretraining.load("gpt")[0]
    _, _, val = pretraining.text_corpus()
    val = val[:4097]
    base = ap.validation_loss(gpt, val, gpt.max_len)
    assert abs(ap.validation_loss(ap.quantized(gpt, 8), val, gpt.max_len) - base) < 0.01
    assert ap.validation_loss(ap.quantized(gpt, 2), val, gpt.max_len) > base + 0.5


def test_seasonal_baselines_are_exact_without_noise():
    x = ap.seasonal_series(4, 33, 8, noise=0.0, seed=1)
    assert torch.equal(x[:, 8:], x[:, :-8])  # the season repeats
    for name, pred in ap.seasonal_baselines(x, 8).items():
        torch.testing.assert_close(pred, x[:, -1], msg=name)


def test_phase_share_counts_the_same_phase_keys():
    w = torch.zeros(1, 1, 10, 10)
    w[0, 0, -1, [6, 2]] = 0.5  # 4 and 8 steps before step 10
    assert ap.phase_share(w, 4) == pytest.approx(1.0)
    assert ap.phase_share(w, 3) == pytest.approx(0.0)


def test_forecast_run_is_seeded_and_complete():
    a = ap.forecast_run(0, steps=5, test=16, batch=8)
    b = ap.forecast_run(0, steps=5, test=16, batch=8)
    assert a["mse"] == b["mse"] and a["curve"] == b["curve"]
    assert set(a["mse"]) == {"Transformer", "seasonal naive", "seasonal mean", "last value"}
    assert len(a["by_lag"]) == 32 and sum(a["by_lag"]) == pytest.approx(1.0, abs=1e-5)
    assert a["uniform_share"] == pytest.approx(4 / 32)


def test_stored_forecasting_runs():
    data = results.measured("applications")
    meta, runs = data["meta"], data["runs"]
    assert len(meta["seeds"]) >= 3 and [(r["steps"], r["seed"]) for r in runs] == [
        (n, s) for n in meta["steps"] for s in meta["seeds"]]
    for key in ("period", "length", "noise", "d_model", "torch", "command", "cpu_seconds"):
        assert key in meta
    for r in runs:  # what the chapter says: every run attends to the same phase of the season
        assert r["phase_share"] > 5 * r["uniform_share"]
        assert len(r["by_lag"]) == meta["length"] - 1 and sum(r["by_lag"]) == pytest.approx(1, abs=1e-4)
        assert set(r["mse"]) == {"Transformer", "seasonal naive", "seasonal mean", "last value"}
    mean = {k: sum(r["mse"][k] for r in runs) / len(runs) for k in runs[0]["mse"]}
    assert mean["seasonal mean"] < mean["Transformer"] < mean["seasonal naive"] < mean["last value"]


def test_stored_baselines_reproduce():
    """The baselines of the stored runs are recomputed from the same held-out series (no training)."""
    data = results.measured("applications")
    meta, run = data["meta"], data["runs"][0]
    x = ap.seasonal_series(meta["test"], meta["length"], meta["period"], noise=meta["noise"], seed=10**9 + run["seed"])
    for name, pred in ap.seasonal_baselines(x, meta["period"]).items():
        assert torch.nn.functional.mse_loss(pred, x[:, -1]).item() == pytest.approx(run["mse"][name], abs=1e-6)
