"""attn.book.induction_heads and scripts/induction_heads.py: the repeated sequences, the head scores on
exact patterns, the ablations (restored on exit, zero = head_mask, mean touching only its head), the
shipped checkpoint against its card, and the stored runs (two layers learn to copy, one cannot)."""

import math

import pytest
import torch

from attn.book import induction_heads as ih
from attn.book import results
from scripts import induction_heads as script


def test_sequences_repeat_a_segment_with_a_period_drawn_per_sequence():
    tokens, periods = ih.repeated_sequences(200, generator=torch.Generator().manual_seed(0))
    assert tokens.shape == (200, ih.LENGTH) and periods.shape == (200,)
    assert periods.min() >= ih.MIN_PERIOD and periods.max() <= ih.MAX_PERIOD
    assert len(set(periods.tolist())) > 10  # the period varies
    assert tokens.min() >= 0 and tokens.max() < len(ih.VOCAB)
    for row, n in zip(tokens, periods.tolist(), strict=True):
        i = torch.arange(ih.LENGTH)
        assert torch.equal(row, row[i % n])  # token i = segment[i mod n]
    again, _ = ih.repeated_sequences(200, generator=torch.Generator().manual_seed(0))
    assert torch.equal(tokens, again)


def _ideal(periods, L, kind):
    B = len(periods)
    w = torch.zeros(B, 1, L, L)
    for b, n in enumerate(periods.tolist()):
        for i in range(L):
            if kind == "previous":
                w[b, 0, i, max(i - 1, 0)] = 1.0
            elif i < n:
                w[b, 0, i, i] = 1.0
            else:
                keys = list(range(i - n + 1, 0, -n))  # after every earlier occurrence
                w[b, 0, i, keys] = 1.0 / len(keys)
    return w


def test_ideal_patterns_score_one_on_their_own_score_and_nothing_on_the_other():
    _, periods = ih.repeated_sequences(16, generator=torch.Generator().manual_seed(1))
    prev, ind = ih.scores_from_weights(_ideal(periods, ih.LENGTH, "previous"), periods)
    assert prev.item() == pytest.approx(1.0) and ind.item() == pytest.approx(0.0)
    prev, ind = ih.scores_from_weights(_ideal(periods, ih.LENGTH, "induction"), periods)
    assert ind.item() == pytest.approx(1.0) and prev.item() < 0.1
    uniform = torch.tril(torch.ones(ih.LENGTH, ih.LENGTH))
    uniform = (uniform / uniform.sum(-1, keepdim=True)).expand(16, 1, -1, -1)
    prev, ind = ih.scores_from_weights(uniform, periods)
    assert prev.item() < 0.2 and ind.item() < 0.2


def test_split_losses_of_a_perfect_copier_are_chance_then_zero():
    tokens, periods = ih.repeated_sequences(32, generator=torch.Generator().manual_seed(2))

    class Copier(torch.nn.Module):  # uniform on the first occurrence, certain on the repeat
        def forward(self, x):
            logits = torch.zeros(*x.shape, len(ih.VOCAB))
            for b, n in enumerate(periods.tolist()):
                for t in range(n + 1, x.shape[1]):
                    logits[b, t - 1, x[b, t - n]] = 100.0
            return logits

    losses = ih.split_losses(Copier(), tokens, periods)
    assert losses["first"] == pytest.approx(math.log(26), abs=1e-5) and losses["repeat"] < 1e-6


@pytest.fixture(scope="module")
def shipped():
    return ih.load(), ih.held_out(64)


def test_the_shipped_checkpoint_reproduces_its_card():
    model = ih.load()
    card = model.card
    losses = ih.split_losses(model, *ih.held_out(card["held_out"]["batch"]))
    assert losses == pytest.approx(card["losses"], abs=1e-3)
    scores = ih.head_scores(model, *ih.held_out(card["held_out"]["batch"]))
    for k, v in scores.items():
        torch.testing.assert_close(v, torch.tensor(card["scores"][k]), atol=1e-3, rtol=0)
    assert losses["repeat"] < 1.0 < ih.CHANCE - 0.1 < losses["first"]


def test_zero_ablation_is_head_mask_and_everything_is_restored(shipped):
    model, (tokens, periods) = shipped
    before = model(tokens)
    with ih.ablated(model, [(1, 2)]):
        zero = model(tokens)
        assert model.layers[1].self_attn.head_mask.tolist() == [1, 1, 0, 1]
    assert model.layers[1].self_attn.head_mask is None
    model.layers[1].self_attn.head_mask = torch.tensor([1.0, 1.0, 0.0, 1.0])
    try:
        torch.testing.assert_close(zero, model(tokens))
    finally:
        model.layers[1].self_attn.head_mask = None
    with ih.ablated(model, [(0, 1)], "mean", reference=tokens):
        assert not torch.equal(model(tokens), before)
    torch.testing.assert_close(model(tokens), before)
    assert all(not m._forward_pre_hooks for m in model.modules())


def test_mean_ablation_replaces_only_the_ablated_heads_output(shipped):
    model, (tokens, _) = shipped
    attn = model.layers[0].self_attn
    E, seen = attn.d_head, []

    def run():  # the heads' outputs concatenated, as W_O receives them (after any ablation's hook)
        hook = attn.out_proj.register_forward_pre_hook(lambda _m, args: seen.append(args[0].clone()))
        try:
            model(tokens)
        finally:
            hook.remove()
        return seen[-1]

    clean = run()
    with ih.ablated(model, [(0, 1)], "mean", reference=tokens[:16]):
        ablated_in = run()
    keep = torch.ones(attn.d_model, dtype=torch.bool)
    keep[E : 2 * E] = False
    torch.testing.assert_close(ablated_in[..., keep], clean[..., keep])
    mean = clean[:16, :, E : 2 * E].mean(0)  # (L, E): head 1's mean output at each position
    torch.testing.assert_close(ablated_in[..., E : 2 * E], mean.expand_as(ablated_in[..., E : 2 * E]))


def test_the_shipped_model_has_previous_token_and_induction_heads(shipped):
    model, batch = shipped
    scores = ih.head_scores(model, *batch)
    assert scores["previous_token"].shape == scores["induction"].shape == (2, 4)
    assert scores["previous_token"][0].max() > 0.3 and scores["induction"][1].max() > 0.5
    table = ih.ablation_table(model, *batch, "zero")
    assert table["repeat"].shape == (2, 4) and table["repeat"].min() >= table["base"] - 0.05
    with ih.ablated(model, [(1, h) for h in range(4)]):
        assert ih.split_losses(model, *batch)["repeat"] > 2.0  # no layer-1 heads, no copying


def test_the_stored_runs_two_layers_copy_and_one_layer_cannot():
    data = results.measured("induction_heads")
    runs = {(r["num_layers"], r["seed"]): r for r in data["runs"]}
    assert set(runs) == {(n, s) for n in script.LAYERS for s in script.SEEDS}
    for r in runs.values():
        c = r["curve"]
        assert len(c["step"]) == len(c["first"]) == len(c["repeat"]) and c["step"][-1] == data["meta"]["steps"]
        assert r["train_cpu_seconds"] > 0 and set(r["scores"]) == {"previous_token", "induction"}
        assert len(c["induction"]) == len(c["step"]) and len(c["induction"][0]) == r["num_layers"]
    two = [runs[2, s]["final"]["repeat"] for s in script.SEEDS]
    one = [runs[1, s]["final"]["repeat"] for s in script.SEEDS]
    assert max(two) < 1.0 and min(one) > 2.0
    assert all(runs[2, s]["phase_change_step"] is not None for s in script.SEEDS)
    assert all(runs[1, s]["phase_change_step"] is None for s in script.SEEDS)
    for s in script.SEEDS:  # the induction heads form as the repeat loss falls
        c = runs[2, s]["curve"]
        at = c["step"].index(runs[2, s]["phase_change_step"])
        assert max(c["induction"][at][1]) > 0.5 > 0.15 > max(c["induction"][0][1])
        assert max(runs[1, s]["scores"]["induction"][0]) < 0.2
        assert runs[2, s]["phase_change_step"] - 5 <= runs[2, s]["phase_change"] <= runs[2, s]["phase_change_step"]
        assert all(v is not None for v in runs[2, s]["heads_form"].values())
    assert data["meta"]["command"].endswith("scripts.induction_heads") and data["meta"]["torch"]


def test_a_tiny_run_and_its_checkpoint(tmp_path):
    r = script.run((1, 0), steps=3)
    assert r["curve"]["step"] == [0, 3] and "state" in r and len(r["curve"]["previous_token"][0][0]) == 4
    card = script.save_checkpoint(r, tmp_path)
    assert (tmp_path / "induction_1layer.pt").exists() and card["losses"]["repeat"] > 2.0


def test_the_char_gpt_is_measured_on_repeated_letters():
    r = ih.char_gpt_induction(batch=8)
    assert r["previous_token"].shape == r["induction"].shape == (2, 4)
    assert r["chance_letters"] == pytest.approx(math.log(26)) and r["chance"] > r["chance_letters"]
    assert math.isfinite(r["first"]) and math.isfinite(r["repeat"]) and r["periods"] == (20, 30)


def test_phase_change_step_is_the_first_step_below_the_threshold_or_the_line_crossing_it():
    log = dict(step=[0, 25, 50, 75], repeat=[3.3, 2.2, 0.9, 0.5])
    assert ih.phase_change_step(log) == 50
    assert ih.phase_change_step(log, interpolate=True) == pytest.approx(25 + 25 * 1.2 / 1.3)
    assert ih.phase_change_step(log, threshold=0.4) is None


def test_score_rise_step_is_where_the_best_head_doubles_its_first_score():
    log = dict(step=[0, 10, 20], induction=[[[0.1, 0.05]], [[0.1, 0.15]], [[0.3, 0.2]]])
    assert ih.score_rise_step(log, "induction", 0) == pytest.approx(10 + 10 / 3)  # 0.15 -> 0.3 meets 0.2
    assert ih.score_rise_step(log, "induction", 0, factor=4) is None


def test_bad_arguments_are_named(shipped):
    model, (tokens, periods) = shipped
    with pytest.raises(ValueError, match="batch"):
        ih.repeated_sequences(0)
    with pytest.raises(ValueError, match="max_period"):
        ih.repeated_sequences(4, min_period=10, max_period=5)
    with pytest.raises(ValueError, match="num_layers"):
        ih.new_model(0)
    with pytest.raises(ValueError, match="periods"):
        ih.split_losses(model, tokens, periods[:-1])
    with pytest.raises(ValueError, match="kind"), ih.ablated(model, [(0, 0)], "half"):
        pass
    with pytest.raises(ValueError, match="heads"), ih.ablated(model, [(2, 0)]):
        pass
    with pytest.raises(ValueError, match="reference"), ih.ablated(model, [(0, 0)], "mean"):
        pass
    with pytest.raises(ValueError, match="name"):
        ih.load("gpt")
    with pytest.raises(ValueError, match="reference"), ih.ablated(model, [(0, 0)], "mean", tokens[:, :10]):
        model(tokens)
    with pytest.raises(ValueError, match="weights"):
        ih.scores_from_weights(torch.ones(2, 1, 4, 5), torch.tensor([2, 2]))
    with pytest.raises(ValueError, match="kind"):
        ih.score_rise_step(dict(step=[0], induction=[[[0.1]]]), "copy", 0)
    with pytest.raises(ValueError, match="layer"):
        ih.score_rise_step(dict(step=[0], induction=[[[0.1]]]), "induction", 1)
    with pytest.raises(ValueError, match="threshold"):
        ih.phase_change_step(dict(step=[0], repeat=[1.0]), threshold=0)
