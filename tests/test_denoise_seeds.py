"""scripts/denoise_seeds.py: BART against T5's span corruption over three seeds (the stored file, and
the scoring it uses reproducing the chapter's numbers on the stored checkpoints)."""

import pytest
import torch

from attn.book import pretraining, results
from scripts import denoise_seeds


def test_the_stored_file_has_every_model_and_seed_with_both_rates():
    data = results.measured("denoise_seeds")
    runs = {(r["name"], r["seed"]): r for r in data["runs"]}
    assert set(runs) == {(n, s) for n in denoise_seeds.NAMES for s in denoise_seeds.SEEDS}
    for r in runs.values():
        assert set(r["accuracy"]) == {f"{rate:.2f}" for rate in denoise_seeds.RATES}
        assert all(0 <= a <= 1 for a in r["accuracy"].values()) and r["train_cpu_seconds"] > 0
    assert data["meta"]["command"].endswith("scripts.denoise_seeds") and data["meta"]["torch"]


def test_seed_zero_is_the_stored_checkpoint_and_scores_as_stored():
    stored = {(r["name"], r["seed"]): r for r in results.measured("denoise_seeds")["runs"]}
    for name in denoise_seeds.NAMES:
        model, _ = pretraining.load(name)
        again = denoise_seeds.score(model, name)
        assert again == pytest.approx(stored[name, 0]["accuracy"], abs=1e-4)


def test_hidden_accuracy_scores_only_the_hidden_characters():
    vocab, _, val_ids = pretraining.text_corpus()
    x = pretraining.windows(val_ids, 4, 16, seed=0)
    hidden = torch.zeros_like(x, dtype=torch.bool)
    hidden[:, 3:6] = True

    class Oracle(torch.nn.Module):  # BART-shaped: predicts the original text everywhere
        def forward(self, src, tgt_in, key_mask):  # noqa: ARG002  (the model interface)
            out = torch.cat([tgt_in[:, 1:], torch.full_like(tgt_in[:, :1], 2)], dim=1)
            return torch.nn.functional.one_hot(out, len(vocab) + 1).float()

    assert denoise_seeds.hidden_accuracy(Oracle(), "bart", x, hidden, len(vocab)) == 1.0


def test_a_tiny_run_trains_and_scores_both_models():
    row = denoise_seeds.run(("t5_spans", 1), steps=2)
    assert row["name"] == "t5_spans" and set(row["accuracy"]) == {"0.15", "0.30"}
