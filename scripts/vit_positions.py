"""Does ViT need its positions on the 8x8 digits? The model-variants chapter's ViT recipe (16 patches
of 2x2 pixels, D = 32, H = 4, two layers, 300 AdamW steps of 64 images) trained with learned
positions, with the fixed 2-D sin-cos table and with no positions at all, five seeds each; then the
two position schemes again on images whose patches are all shuffled by one fixed permutation (the
same for every image, in training and test). Writes the results ``book/positional_encodings.ipynb``
reads: twenty-five training runs take longer than a chapter may.

    PYTHONPATH=src nice -n 5 python -m scripts.vit_positions   # writes benchmarks/measured/vit_positions.json

Without positions the encoder sees a set of patches: the ``[CLS]`` readout is the same for any
order of them (``tests/test_variants.py``), so the shuffled run of ``"none"`` would repeat its
unshuffled one and is not trained.
"""

from __future__ import annotations

import sys
import time

import torch
import torch.nn.functional as F

import attn
from attn.book import results
from attn.variants import ViT

POSITIONS = ("learned", "sincos2d", "none")
SEEDS = (0, 1, 2, 3, 4)
STEPS = 300
DIMS = dict(d_model=32, num_heads=4, num_layers=2)
N_TRAIN = 1297  # of the 1,797 digits; the rest is the test set (as in the model-variants chapter)
SHUFFLE_SEED = 1234  # the one permutation of the 16 patches used by the shuffled runs
OUT = "vit_positions"  # benchmarks/measured/vit_positions.json (attn.book.results)


def digits() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """The model-variants chapter's split of scikit-learn's digits: ``X`` ``(N, 1, 8, 8)`` in
    ``[0, 1]``, labels ``y`` ``(N,)``, and the train and test indices (a permutation seeded with 0)."""
    from sklearn.datasets import load_digits  # the chapters require scikit-learn; attn does not

    d = load_digits()
    X = torch.tensor(d.images, dtype=torch.float32)[:, None] / 16  # (N, 1, 8, 8)
    y = torch.tensor(d.target)
    perm = torch.randperm(len(y), generator=torch.Generator().manual_seed(0))
    return X, y, perm[:N_TRAIN], perm[N_TRAIN:]


def shuffle_patches(images: torch.Tensor, perm: torch.Tensor, patch: int = 2) -> torch.Tensor:
    """``images`` ``(B, C, S, S)`` with their ``patch x patch`` tiles reordered: tile ``i`` of the
    result (row-major) is tile ``perm[i]`` of the input. Pixels inside a tile keep their places."""
    B, C, S, _ = images.shape
    g = S // patch
    tiles = images.reshape(B, C, g, patch, g, patch).permute(0, 2, 4, 1, 3, 5).reshape(B, g * g, C, patch, patch)
    tiles = tiles[:, perm].reshape(B, g, g, C, patch, patch)
    return tiles.permute(0, 3, 1, 4, 2, 5).reshape(B, C, S, S)


def train_vit(positions: str, seed: int, *, shuffled: bool = False, steps: int = STEPS, data=None) -> float:
    """Test accuracy of one ViT trained with the model-variants chapter's recipe (``train_vit``
    there: the same seeds give the same model for ``positions="learned"``)."""
    X, y, train_idx, test_idx = data or digits()
    if shuffled:
        X = shuffle_patches(X, torch.randperm(16, generator=torch.Generator().manual_seed(SHUFFLE_SEED)))
    torch.manual_seed(seed)
    model = ViT(image_size=8, patch_size=2, num_classes=10, positions=positions, **DIMS)

    def batch(step):
        g = torch.Generator().manual_seed(seed * 100_000 + step)
        i = train_idx[torch.randint(len(train_idx), (64,), generator=g)]
        return X[i], y[i]

    def loss(m, b):
        return F.cross_entropy(m(b[0]), b[1])

    attn.book.train.train(model, batch, loss, steps=steps, lr=3e-3, warmup=20, seed=seed, progress=False)
    with torch.no_grad():
        return (model(X[test_idx]).argmax(-1) == y[test_idx]).float().mean().item()


def run(setting: tuple[str, bool, int]) -> dict:
    """One run (``(positions, shuffled, seed)``) with its processor time; accuracy to 6 decimals."""
    positions, shuffled, seed = setting
    start = time.process_time()
    acc = train_vit(positions, seed, shuffled=shuffled)
    return {"positions": positions, "shuffled": shuffled, "seed": seed, "acc": round(acc, 6),
            "train_cpu_seconds": round(time.process_time() - start, 2)}


def settings() -> list[tuple[str, bool, int]]:
    """Every run: each position scheme on the digits, then the two with positions on shuffled patches."""
    plain = [(p, False, s) for p in POSITIONS for s in SEEDS]
    return plain + [(p, True, s) for p in POSITIONS if p != "none" for s in SEEDS]


def main(argv: list[str]) -> None:
    """``python -m scripts.vit_positions [OUT.json]`` (default: the file the chapter reads)."""
    out = argv[0] if argv else OUT
    runs = attn.book.train.run_side_by_side(run, settings())  # one thread each
    meta = dict(positions=list(POSITIONS), seeds=list(SEEDS), steps=STEPS, **DIMS, patch_size=2, batch=64,
                lr=3e-3, warmup=20, n_train=N_TRAIN, n_test=1797 - N_TRAIN, shuffle_seed=SHUFFLE_SEED, threads=1,
                torch=torch.__version__, cpu_seconds=round(sum(r["train_cpu_seconds"] for r in runs), 1),
                command="PYTHONPATH=src nice -n 5 python -m scripts.vit_positions")
    results.write(out, dict(meta=meta, runs=runs))


if __name__ == "__main__":
    main(sys.argv[1:])
