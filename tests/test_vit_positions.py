"""scripts/vit_positions.py: the patch shuffle, the runs it trains, and the file the positional
chapter reads (benchmarks/measured/vit_positions.json)."""

import pytest
import torch

from attn.book import results
from scripts import vit_positions as vp


def test_shuffle_patches_moves_whole_tiles_to_the_places_perm_says():
    images = torch.arange(2 * 64, dtype=torch.float32).reshape(2, 1, 8, 8)
    perm = torch.randperm(16, generator=torch.Generator().manual_seed(0))
    out = vp.shuffle_patches(images, perm)

    def tile(x, i):  # tile i, row-major, of a (B, 1, 8, 8) batch
        r, c = divmod(int(i), 4)
        return x[:, :, 2 * r : 2 * r + 2, 2 * c : 2 * c + 2]

    for i in range(16):
        assert torch.equal(tile(out, i), tile(images, perm[i]))
    assert torch.equal(vp.shuffle_patches(out, torch.argsort(perm)), images)  # the inverse undoes it


def test_settings_train_every_scheme_and_shuffle_only_the_ones_with_positions():
    runs = vp.settings()
    assert len(runs) == len(set(runs)) == (3 + 2) * len(vp.SEEDS)
    assert {(p, s) for p, s, _ in runs} == {("learned", False), ("sincos2d", False), ("none", False),
                                          ("learned", True), ("sincos2d", True)}


def test_without_positions_a_shuffled_training_run_repeats_the_plain_one():
    data = vp.digits()
    assert [len(t) for t in data] == [1797, 1797, vp.N_TRAIN, 1797 - vp.N_TRAIN]
    plain = vp.train_vit("none", 0, steps=15, data=data)
    assert vp.train_vit("none", 0, steps=15, data=data, shuffled=True) == pytest.approx(plain, abs=2e-3)


def test_the_stored_results_have_every_run_and_their_metadata():
    got = results.measured("vit_positions")
    meta, runs = got["meta"], got["runs"]
    assert meta["seeds"] == list(vp.SEEDS) and meta["steps"] == vp.STEPS and meta["positions"] == list(vp.POSITIONS)
    assert {"torch", "command", "cpu_seconds", "shuffle_seed"} <= set(meta)
    assert [(r["positions"], r["shuffled"], r["seed"]) for r in runs] == vp.settings()
    assert all(0.1 < r["acc"] <= 1 and r["train_cpu_seconds"] > 0 for r in runs)


@pytest.mark.slow
def test_one_stored_run_is_reproduced():
    stored = next(r for r in results.measured("vit_positions")["runs"] if r["positions"] == "none" and r["seed"] == 0)
    torch.set_num_threads(1)
    assert vp.train_vit("none", 0) == pytest.approx(stored["acc"], abs=1e-6)
