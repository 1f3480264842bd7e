"""Scaling, measured small (attn.book.scaling, scripts/scaling.py): the power-law fit against synthetic
data with a known exponent, the parameter count against a hand count and the model's own weights,
6 N D against GPT-3's published compute, and the stored results' schema."""

import math

import numpy as np
import pytest
import torch

import attn
from attn.book import scaling


def test_fit_is_exact_on_a_noise_free_power_law():
    N = np.logspace(3, 6, 7)
    fit = scaling.fit_power_law(N, (8.8e13 / N) ** 0.076)
    assert fit["alpha"] == pytest.approx(0.076, rel=1e-9) and fit["x_c"] == pytest.approx(8.8e13, rel=1e-6)
    assert fit["alpha_se"] < 1e-9 and fit["r2"] == pytest.approx(1.0)
    assert scaling.alpha_without_each(N, (8.8e13 / N) ** 0.076) == pytest.approx([0.076] * 7)


def test_leaving_out_a_size_off_the_line_moves_the_exponent():
    N = np.logspace(3, 5, 5)
    loss = (1e9 / N) ** 0.1
    loss[2] *= 1.05  # one size above the line
    alphas = scaling.alpha_without_each(N, loss)
    assert len(alphas) == 5 and alphas[2] == pytest.approx(0.1)  # without it, the exact law
    assert all(abs(a - 0.1) > 1e-4 for i, a in enumerate(alphas) if i != 2)


def test_fit_recovers_a_known_exponent_and_its_uncertainty_covers_it():
    """Six sizes, three noisy seeds each (1% noise, as seeds give): the exponent comes back within
    two standard errors and inside the bootstrap's 95% interval, over many synthetic draws."""
    rng = np.random.default_rng(0)
    N = np.repeat(np.logspace(3.5, 5.5, 6), 3)
    groups = np.repeat(np.arange(6), 3)
    covered_se = covered_boot = 0
    for _ in range(40):
        loss = (1e9 / N) ** 0.1 * np.exp(rng.normal(0, 0.01, N.shape))
        fit = scaling.fit_power_law(N, loss)
        covered_se += abs(fit["alpha"] - 0.1) <= 2 * fit["alpha_se"]
        lo, hi = scaling.bootstrap_alpha(N, loss, groups, samples=200, seed=1)
        covered_boot += lo <= 0.1 <= hi
        assert lo < fit["alpha"] < hi
    assert covered_se >= 34 and covered_boot >= 32  # ~95% nominal; a seeds' bootstrap runs a little narrow


def test_non_embedding_params_equal_a_hand_count_and_the_models_weight_matrices():
    # d_model 16, one layer: Q, K, V, O are 16 x 16 each, the feed-forward 16 x 64 and 64 x 16
    assert scaling.non_embedding_params(16, 1) == 4 * 16 * 16 + 2 * 16 * 64 == 3072
    assert scaling.non_embedding_params(64, 3) == 12 * 3 * 64**2
    model = attn.variants.GPT(50, 32, num_heads=4, num_layers=2, max_len=8)
    matrices = sum(p.numel() for p in model.layers.parameters() if p.dim() == 2)  # no biases, no LayerNorms
    assert matrices == scaling.non_embedding_params(32, 2)


def test_six_n_d_matches_gpt3s_published_compute():
    """Brown et al. (2020), table D.1: 175B parameters, 300B tokens, 3.14e23 FLOPs (3,640 petaflop/s-days)."""
    c = scaling.flops(175e9, 300e9)
    assert c == pytest.approx(3.14e23, rel=0.01)
    assert c / (1e15 * 86400) == pytest.approx(3640, rel=0.01)


def test_bad_inputs_are_named():
    with pytest.raises(ValueError, match="d_model"):
        scaling.non_embedding_params(0, 1)
    with pytest.raises(ValueError, match="tokens"):
        scaling.flops(1e6, -1)
    with pytest.raises(ValueError, match="x must be a positive number"):
        scaling.fit_power_law([1, 2, 0], [1, 1, 1])
    with pytest.raises(ValueError, match="length"):
        scaling.fit_power_law([1, 2], [1, 1])


def test_validation_loss_of_an_untrained_model_is_about_log_vocab():
    vocab, _, val = attn.book.pretraining.text_corpus()
    torch.manual_seed(0)
    model = attn.variants.GPT(len(vocab), 16, num_heads=2, num_layers=1, max_len=scaling.CONTEXT)
    assert abs(scaling.validation_loss(model, val) - math.log(len(vocab))) < 0.1


def test_the_script_trains_every_setting_once():
    from scripts import scaling as script

    runs = script.settings()
    assert len(runs) == len(set(runs))
    assert {(d, n) for d, n, t, s in runs if t == script.STEPS} >= set(script.SIZES)
    assert {t for d, n, t, s in runs if (d, n) == script.DATA_SIZE} == set(script.DATA_STEPS)


def _stored() -> dict:
    return attn.book.results.measured("scaling")


def test_stored_results_hold_both_sweeps_with_three_seeds():
    from scripts import scaling as script

    stored = _stored()
    meta, runs = stored["meta"], stored["runs"]
    assert {"seeds", "steps", "sizes", "data_size", "data_steps", "batch", "context", "torch", "command",
            "cpu_seconds"} <= set(meta)
    assert meta["sizes"] == [list(s) for s in script.SIZES] and meta["steps"] == script.STEPS
    assert {(r["d_model"], r["layers"], r["steps"], r["seed"]) for r in runs} == set(script.settings())
    for r in runs:
        assert r["N"] == scaling.non_embedding_params(r["d_model"], r["layers"]) < r["params"]
        assert r["tokens"] == r["steps"] * meta["batch"] * meta["context"] and 0 < r["val_loss"] < 5
    Ns = {r["N"] for r in runs if r["steps"] == meta["steps"]}
    assert len(Ns) >= 5 and math.log10(max(Ns) / min(Ns)) >= 1.5 and len(meta["seeds"]) >= 3
    assert len(meta["data_steps"]) >= 4 and meta["cpu_seconds"] < 6 * 60


@pytest.mark.slow
def test_one_stored_run_is_reproduced():
    """The cheapest stored run, again (about 5 s of CPU). Equal to 6 decimals on the machine that
    wrote the file; other CPUs round differently during training, so the check allows a little."""
    torch.set_num_threads(1)
    meta = _stored()["meta"]
    d, n = meta["sizes"][0]
    stored = next(r for r in _stored()["runs"] if (r["d_model"], r["layers"], r["steps"], r["seed"]) == (d, n, meta["steps"], 0))
    again = scaling.run(d, n, meta["steps"], 0, lr=meta["lr"])
    assert abs(again["val_loss"] - stored["val_loss"]) <= 0.01, (again["val_loss"], stored["val_loss"])
