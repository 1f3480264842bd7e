"""Pre-train, then fine-tune (attn.book.finetune, scripts/finetune.py): the task, the runs and the
stored results the model-variants chapter shows."""

import random
import re

import pytest
import torch

from attn.book import finetune, pretraining, results

TEXT = "the object is returned by the function when it is called, and the value is kept."


def _words(s: str) -> list[str]:
    return re.findall(r"[a-z]+", s)


def test_scramble_keeps_each_words_letters_and_everything_else_in_place():
    out = finetune.scramble(TEXT, random.Random(0))
    assert out != TEXT and len(out) == len(TEXT)
    assert [sorted(w) for w in _words(out)] == [sorted(w) for w in _words(TEXT)]
    assert re.sub(r"[a-z]", "*", out) == re.sub(r"[a-z]", "*", TEXT)  # spaces and punctuation stay


def test_task_is_deterministic_and_its_labels_are_right():
    text = pretraining.text_corpus()[0].decode(pretraining.text_corpus()[1])
    xs, ys = finetune.real_or_scrambled(text, 200, seed=3)
    assert (xs, ys) == finetune.real_or_scrambled(text, 200, seed=3)
    assert (xs, ys) != finetune.real_or_scrambled(text, 200, seed=4)
    assert all(len(x) == finetune.LENGTH for x in xs) and set(ys) == {0, 1}
    assert 60 <= sum(ys) <= 140  # a fair coin per window
    assert all(x in text for x, y in zip(xs, ys, strict=True) if y == 1)  # real windows are the text
    assert not any(x in text for x, y in zip(xs, ys, strict=True) if y == 0)  # scrambled ones are not


def test_task_refuses_bad_arguments_by_name():
    with pytest.raises(ValueError, match="n must be a positive integer"):
        finetune.real_or_scrambled(TEXT, 0)
    with pytest.raises(ValueError, match="length=100"):
        finetune.real_or_scrambled(TEXT, 3, length=100)
    with pytest.raises(ValueError, match="budget"):
        finetune.finetune(None, 0)


def test_a_tiny_finetune_runs_and_leaves_the_pretrained_encoder_unchanged():
    torch.set_num_threads(1)
    start, losses = finetune.pretrain(2)
    before = {k: v.clone() for k, v in start.state_dict().items()}
    r = finetune.finetune(start, 8, steps=3, test=20)
    assert 0.0 <= r["accuracy"] <= 1.0 and len(r["losses"]) == 3 and len(losses) == 2
    assert all(torch.equal(before[k], v) for k, v in start.state_dict().items())
    logits = finetune.Classifier(finetune.encoder())(torch.zeros(5, finetune.LENGTH, dtype=torch.long))
    assert logits.shape == (5, 2)


def test_the_script_writes_every_start_budget_and_seed(tmp_path, monkeypatch):
    from scripts import finetune as script

    monkeypatch.setattr(script, "STEPS", 2)
    data = script.main([str(tmp_path / "tiny.json")], pretrain_steps=2, budgets=(8,), seeds=(0, 1))
    assert (tmp_path / "tiny.json").exists()
    assert {(r["start"], r["budget"], r["seed"]) for r in data["runs"]} == {
        (s, 8, seed) for s in ("pretrained", "scratch", "pairs") for seed in (0, 1)}


def _stored() -> dict:
    return results.measured("finetune")


def test_stored_results_cover_every_budget_and_seed_for_each_start():
    from scripts import finetune as script

    stored = _stored()
    meta = stored["meta"]
    assert meta["budgets"] == list(script.BUDGETS) and meta["seeds"] == list(script.SEEDS) and len(script.SEEDS) >= 3
    assert meta["steps"] == script.STEPS and meta["pretrain"]["steps"] == script.PRETRAIN_STEPS
    assert {"torch", "command", "cpu_seconds", "sizes", "lr"} <= set(meta)
    cells = [(r["start"], r["budget"], r["seed"]) for r in stored["runs"]]
    assert sorted(cells) == sorted((s, b, seed) for s in meta["starts"] for b in meta["budgets"] for seed in meta["seeds"])
    assert all(0.0 <= r["accuracy"] <= 1.0 and r["cpu_seconds"] > 0 for r in stored["runs"])


def test_one_stored_baseline_run_is_reproduced():
    """The bag-of-pairs baseline (0.2 s) gives the stored accuracy again: the task and its seeds
    are what the script used."""
    stored = next(r for r in _stored()["runs"] if (r["start"], r["budget"], r["seed"]) == ("pairs", 32, 0))
    assert abs(finetune.pair_baseline(32, seed=0) - stored["accuracy"]) <= 0.01


@pytest.mark.slow
def test_one_stored_scratch_run_is_reproduced():
    """A from-scratch fine-tuning run (about 6 s of CPU) gives the stored accuracy again, within what
    other CPUs' rounding moves it."""
    torch.set_num_threads(1)
    stored = next(r for r in _stored()["runs"] if (r["start"], r["budget"], r["seed"]) == ("scratch", 32, 0))
    again = finetune.finetune(None, 32, seed=0, steps=_stored()["meta"]["steps"], lr=_stored()["meta"]["lr"])
    assert abs(again["accuracy"] - stored["accuracy"]) <= 0.02
