"""Objectives, baselines and training recipes for the model-variants chapter.

The three text models (BERT, GPT, T5) need a few thousand sequences more than a chapter can afford
to train on two CPU cores, so ``scripts/train_variants.py`` trains them with the recipes below
(seeded, one thread, CPU) and stores small float16 checkpoints with their training logs in
``attn/checkpoints/``. :func:`load` gives a chapter the trained model and its log.

- :func:`text_corpus`: the English of ``pydoc_data`` (:func:`attn.book.data.english_text`), as characters,
  split 90/10 into training and validation text.
- :func:`mlm_mask`: BERT's masking: 15% of the positions are predicted; of those, 80% are replaced
  by ``[MASK]``, 10% by a random token, 10% left unchanged.
- :func:`char_baselines`: unigram and bigram validation losses (add-one smoothing), the bars a
  character language model must clear.
- :func:`date_batch`: the dates task of :class:`attn.book.data.DateTask` in one shared vocabulary, as T5
  shares one embedding between encoder, decoder and output.
"""

from __future__ import annotations

import dataclasses
import json
from importlib import resources

import torch
import torch.nn.functional as F

from attn.book import train as _train
from attn.book.data import IGNORE, CharVocab, DateTask, english_text
from attn.measure import stopwatch
from attn.variants import BERT, GPT, T5

__all__ = ["RECIPES", "Recipe", "build", "char_baselines", "date_batch", "date_vocab", "load", "mlm_mask",
           "text_corpus", "train_recipe", "windows"]

TEXT_CHARS = 200_000


def text_corpus(max_chars: int = TEXT_CHARS) -> tuple[CharVocab, torch.Tensor, torch.Tensor]:
    """``(vocab, train_ids, val_ids)``: the first 90% of the text for training, the rest for validation."""
    text = english_text(max_chars)
    vocab = CharVocab(text)
    ids = torch.tensor(vocab.encode(text))
    cut = int(0.9 * len(ids))
    return vocab, ids[:cut], ids[cut:]


def windows(ids: torch.Tensor, n: int, length: int, *, seed: int) -> torch.Tensor:
    """``n`` random windows of ``length`` consecutive ids, ``(n, length)``, seeded."""
    g = torch.Generator().manual_seed(seed)
    starts = torch.randint(0, len(ids) - length, (n,), generator=g).tolist()
    return torch.stack([ids[s : s + length] for s in starts])  # (n, length)


def mlm_mask(x: torch.Tensor, mask_id: int, vocab_size: int, *, p: float = 0.15, first_real: int = 3,
             generator: torch.Generator | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """BERT's masked-LM corruption of ids ``x`` ``(B, L)``.

    Each position is chosen with probability ``p``; a chosen position becomes ``mask_id`` with
    probability 0.8, a random id in ``[first_real, vocab_size)`` with 0.1, and stays as it is with
    0.1. Returns ``(inputs, targets)``, both ``(B, L)``; ``targets`` holds the original id at chosen
    positions and ``IGNORE`` (-100) elsewhere, so the loss counts only chosen positions.
    """
    chosen = torch.rand(x.shape, generator=generator) < p  # (B, L)
    r = torch.rand(x.shape, generator=generator)
    inputs = x.clone()
    inputs[chosen & (r < 0.8)] = mask_id
    rand = chosen & (r >= 0.8) & (r < 0.9)
    inputs[rand] = torch.randint(first_real, vocab_size, (int(rand.sum()),), generator=generator)
    return inputs, x.masked_fill(~chosen, IGNORE)


def char_baselines(train_ids: torch.Tensor, val_ids: torch.Tensor, vocab_size: int) -> dict[str, float]:
    """Validation cross-entropy (nats per character) of add-one-smoothed unigram and bigram models.

    Shape: ``train_ids`` ``(N,)`` and ``val_ids`` ``(M,)`` character ids below ``vocab_size``.
    """
    uni = torch.bincount(train_ids, minlength=vocab_size).double() + 1
    uni = uni / uni.sum()
    big = torch.ones(vocab_size, vocab_size, dtype=torch.float64)
    big.index_put_((train_ids[:-1], train_ids[1:]), torch.ones(len(train_ids) - 1, dtype=torch.float64),
                   accumulate=True)
    big = big / big.sum(1, keepdim=True)
    return {"unigram": -uni.log()[val_ids[1:]].mean().item(),
            "bigram": -big[val_ids[:-1], val_ids[1:]].log().mean().item()}


def date_vocab() -> CharVocab:
    """One character vocabulary for dates in words and ISO dates (``<pad>`` 0, ``<s>`` 1, ``</s>`` 2)."""
    return CharVocab("0123456789 -" + "".join(DateTask.MONTHS))


def date_batch(pairs: list[tuple[str, str]], vocab: CharVocab) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``(src, tgt_in, tgt_out)``: sources end with ``</s>``; ``tgt_in`` starts with ``<s>``, ``tgt_out``
    ends with ``</s>``; padding is 0 (``IGNORE`` in ``tgt_out``)."""
    src = [vocab.encode(s, eos=True) for s, _ in pairs]
    tgt = [vocab.encode(t, eos=True) for _, t in pairs]
    S, T = max(map(len, src)), max(map(len, tgt))
    src_t = torch.tensor([s + [vocab.PAD] * (S - len(s)) for s in src])  # (B, S)
    tout = torch.tensor([t + [vocab.PAD] * (T - len(t)) for t in tgt])  # (B, T)
    tin = torch.cat([torch.full((len(pairs), 1), vocab.BOS), tout[:, :-1]], dim=1)  # (B, T)
    return src_t, tin, tout.masked_fill(tout == vocab.PAD, IGNORE)


@dataclasses.dataclass(frozen=True)
class Recipe:
    """Sizes and optimisation of one trained variant."""

    sizes: dict
    steps: int
    batch: int
    length: int
    lr: float
    warmup: int


RECIPES: dict[str, Recipe] = {
    "bert": Recipe(dict(d_model=64, num_heads=4, num_layers=2), steps=1500, batch=32, length=64, lr=2e-3, warmup=100),
    "gpt": Recipe(dict(d_model=64, num_heads=4, num_layers=2), steps=1500, batch=32, length=64, lr=3e-3, warmup=100),
    "t5": Recipe(dict(d_model=48, num_heads=4, num_layers=2, d_ff=96, num_buckets=16, max_distance=32),
                 steps=600, batch=64, length=0, lr=3e-3, warmup=50),
}


def build(name: str, seed: int = 0):
    """The untrained model of recipe ``name`` (``"bert"``, ``"gpt"``, ``"t5"``), seeded."""
    if name not in RECIPES:
        raise ValueError(f"name must be one of {sorted(RECIPES)}, got {name!r}")
    torch.manual_seed(seed)
    r = RECIPES[name]
    if name == "t5":
        V = len(date_vocab())
        return T5(V, **r.sizes, pad_id=CharVocab.PAD, eos_id=CharVocab.EOS, decoder_start_id=CharVocab.BOS)
    V = len(text_corpus()[0])
    if name == "bert":
        return BERT(V + 1, **r.sizes, max_len=r.length)  # one extra id: [MASK] = V
    return GPT(V, **r.sizes, max_len=r.length)


def _objective(name: str, recipe: Recipe, seed: int):
    """``(batch(step), loss(model, batch))`` of a recipe."""
    if name == "t5":
        vocab, task = date_vocab(), DateTask()

        def batch(step):
            return date_batch(task.sample(recipe.batch, seed=seed * 10**6 + step), vocab)

        def loss(model, b):
            src, tin, tout = b
            logits = model(src, tin, src != vocab.PAD)  # (B, T, V)
            return F.cross_entropy(logits.flatten(0, 1), tout.flatten())

        return batch, loss
    vocab, train_ids, _ = text_corpus()
    V = len(vocab)
    if name == "gpt":
        def batch(step):
            return windows(train_ids, recipe.batch, recipe.length + 1, seed=seed * 10**6 + step)

        def loss(model, x):
            return F.cross_entropy(model(x[:, :-1]).flatten(0, 1), x[:, 1:].flatten())

        return batch, loss

    def batch(step):  # bert
        x = windows(train_ids, recipe.batch, recipe.length, seed=seed * 10**6 + step)
        return mlm_mask(x, V, V, generator=torch.Generator().manual_seed(seed * 10**6 + step + 1))

    def loss(model, b):
        inputs, targets = b
        return F.cross_entropy(model(inputs).flatten(0, 1), targets.flatten())

    return batch, loss


def train_recipe(name: str, seed: int = 0):
    """Train recipe ``name`` from scratch; returns ``(model, log)`` with the loss of every step,
    the processor time, the parameter count and the recipe."""
    recipe = RECIPES[name]
    model = build(name, seed)
    batch, loss = _objective(name, recipe, seed)
    with stopwatch("process") as took:
        losses = _train.train(model, batch, loss, steps=recipe.steps, lr=recipe.lr, warmup=recipe.warmup, seed=seed,
                              progress=False)
    log = dict(name=name, seed=seed, seconds=round(took.seconds, 1),
               threads=torch.get_num_threads(), torch=torch.__version__,
               parameters=sum(p.numel() for p in model.parameters()),
               recipe=dataclasses.asdict(recipe), losses=[round(x, 4) for x in losses])
    return model, log


def _files():
    return resources.files("attn.book") / "checkpoints"


def load(name: str):
    """The trained model of recipe ``name`` (float32, eval mode) and its training log (a dict)."""
    model = build(name)
    state = torch.load(_files() / f"{name}.pt", map_location="cpu", weights_only=True)
    model.load_state_dict(state)  # float16 on disk, copied into the float32 parameters
    with (_files() / f"{name}.json").open(encoding="utf-8") as f:
        log = json.load(f)
    return model.eval(), log
