"""Objectives, baselines and training recipes for the model-variants chapter.

The text models (BERT, GPT, T5, BART) need a few thousand sequences more than a chapter can afford
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
- :func:`noise_spans`, :func:`text_infilling`, :func:`span_corruption`: the denoising objectives of
  the two encoder-decoders on the same text: BART rewrites the whole text from a copy whose hidden
  spans became one mask each; T5 writes only the hidden spans, each after the sentinel that stands
  for it in the source.
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
from attn.variants import BART, BERT, GPT, T5

__all__ = ["BART_RATE", "MEAN_SPAN", "N_SENTINELS", "RECIPES", "T5_RATE", "Recipe", "bracketed", "build",
           "char_baselines", "date_batch", "date_vocab", "load", "marked", "mlm_mask", "noise_spans", "span_corruption", "text_corpus",
           "text_infilling", "train_recipe", "windows"]

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


#: The rates of the encoder-decoders' denoising objectives. BART hides about 30% of the characters,
#: T5 15%, both in spans whose lengths are drawn from Poisson(3) (BART's choice; T5 draws its span
#: lengths around a mean of 3 too).
BART_RATE, T5_RATE, MEAN_SPAN = 0.3, 0.15, 3.0
#: How many sentinel ids T5's span corruption has (one per hidden span of a sequence).
N_SENTINELS = 16


def noise_spans(shape: tuple[int, int], rate: float, *, mean_span: float = MEAN_SPAN,
                generator: torch.Generator | None = None) -> torch.Tensor:
    """Which positions to hide, ``(B, L)`` boolean (``True`` = hidden), in spans.

    For each row, span lengths are drawn from Poisson(``mean_span``) and each span is placed at a
    uniformly drawn start, until at least ``round(rate * L)`` positions are hidden. Spans that
    overlap or touch merge into one. A zero-length draw is skipped (BART's paper uses it to insert
    a mask where nothing is missing; this toy leaves that case out).
    """
    B, L = shape
    want = max(1, round(rate * L))
    hidden = torch.zeros(B, L, dtype=torch.bool)
    lam = torch.tensor([mean_span])
    for b in range(B):
        while int(hidden[b].sum()) < want:
            k = min(int(torch.poisson(lam, generator=generator).item()), L)
            if k == 0:
                continue
            start = int(torch.randint(0, L - k + 1, (1,), generator=generator))
            hidden[b, start : start + k] = True
    return hidden


def _runs(row: torch.Tensor) -> list[tuple[int, int]]:
    """``(start, end)`` of each run of ``True`` in a boolean ``(L,)``."""
    edges = torch.diff(torch.cat([torch.zeros(1), row.float(), torch.zeros(1)])).tolist()
    starts = [i for i, e in enumerate(edges) if e > 0]
    ends = [i for i, e in enumerate(edges) if e < 0]
    return list(zip(starts, ends, strict=True))


def _pad(rows: list[list[int]], value: int) -> torch.Tensor:
    n = max(map(len, rows))
    return torch.tensor([r + [value] * (n - len(r)) for r in rows])


def text_infilling(x: torch.Tensor, mask_id: int, *, rate: float = BART_RATE, hidden: torch.Tensor | None = None,
                   generator: torch.Generator | None = None):
    """BART's text infilling of ids ``x`` ``(B, L)``: each span of hidden characters becomes ONE
    ``mask_id``, so the source does not say how many characters are missing; the decoder rewrites
    the whole original.

    ``hidden`` ``(B, L)`` (default: :func:`noise_spans` at ``rate``) says which characters to hide.
    Returns ``(src, tgt_in, tgt_out, hidden)``: ``src`` ``(B, S)`` the corrupted text then ``</s>``,
    padded with ``<pad>``; ``tgt_in`` ``(B, L + 1)`` ``<s>`` then ``x``; ``tgt_out`` ``(B, L + 1)`` ``x``
    then ``</s>`` (every position is scored); ``hidden`` ``(B, L)``.
    """
    if hidden is None:
        hidden = noise_spans(x.shape, rate, generator=generator)
    rows = []
    for b in range(x.shape[0]):
        ids, keep = x[b].tolist(), [True] * x.shape[1]
        for start, end in _runs(hidden[b]):
            ids[start], keep[start + 1 : end] = mask_id, [False] * (end - start - 1)  # the span -> one mask
        rows.append([i for i, k in zip(ids, keep, strict=True) if k] + [CharVocab.EOS])
    B = x.shape[0]
    tgt_in = torch.cat([torch.full((B, 1), CharVocab.BOS), x], dim=1)  # (B, L + 1)
    tgt_out = torch.cat([x, torch.full((B, 1), CharVocab.EOS)], dim=1)  # (B, L + 1)
    return _pad(rows, CharVocab.PAD), tgt_in, tgt_out, hidden


def span_corruption(x: torch.Tensor, sentinel_id: int, *, rate: float = T5_RATE, hidden: torch.Tensor | None = None,
                    generator: torch.Generator | None = None):
    """T5's span corruption of ids ``x`` ``(B, L)``: the ``k``-th hidden span of a row becomes the
    sentinel ``sentinel_id + k`` in the source, and the target holds only the hidden spans, each
    after its sentinel: ``<X> span <Y> span ... </s>``.

    ``hidden`` as in :func:`text_infilling`. Returns ``(src, tgt_in, tgt_out, scored)``: ``src``
    ``(B, S)`` and ``tgt_in`` ``(B, T)`` padded with ``<pad>``, ``tgt_out`` ``(B, T)`` padded with
    ``IGNORE``; ``scored`` ``(B, T)`` is ``True`` where ``tgt_out`` holds a hidden character (not a
    sentinel, ``</s>`` or padding).
    """
    if hidden is None:
        hidden = noise_spans(x.shape, rate, generator=generator)
    srcs, tgts, flags = [], [], []
    for b in range(x.shape[0]):
        ids, runs = x[b].tolist(), _runs(hidden[b])
        if len(runs) > N_SENTINELS:
            raise ValueError(f"row {b} has {len(runs)} hidden spans, more than the {N_SENTINELS} sentinels")
        src, tgt, flag, prev = [], [], [], 0
        for k, (start, end) in enumerate(runs):
            src += ids[prev:start] + [sentinel_id + k]
            tgt += [sentinel_id + k] + ids[start:end]
            flag += [False] + [True] * (end - start)
            prev = end
        srcs.append(src + ids[prev:] + [CharVocab.EOS])
        tgts.append(tgt + [CharVocab.EOS])
        flags.append(flag + [False])
    tgt_out = _pad(tgts, IGNORE)  # (B, T)
    tgt_in = torch.cat([torch.full((len(tgts), 1), CharVocab.BOS), tgt_out[:, :-1]], dim=1).masked_fill(
        torch.cat([torch.zeros(len(tgts), 1, dtype=torch.bool), tgt_out[:, :-1] == IGNORE], dim=1), CharVocab.PAD)
    scored = _pad([[int(f) for f in fl] for fl in flags], 0).bool()
    return _pad(srcs, CharVocab.PAD), tgt_in, tgt_out, scored


def marked(vocab: CharVocab, ids: torch.Tensor, mask_id: int, *, sentinels: bool = False) -> str:
    """Ids ``(L,)`` as text: ``_`` for BART's mask (ids from ``mask_id`` on), or ``<X>``, ``<Y>``, ... for
    T5's sentinels; ``<s>`` and ``</s>`` shown, padding dropped."""
    names = {vocab.PAD: "", vocab.BOS: "<s>", vocab.EOS: "</s>", IGNORE: ""}
    out = [("<" + "XYZUVW"[i - mask_id] + ">" if sentinels and i - mask_id < 6 else "_") if i >= mask_id
           else names.get(i, vocab.itos[i] if i >= 0 else "") for i in ids.tolist()]
    return "".join(out)


def bracketed(vocab: CharVocab, ids: torch.Tensor, hidden: torch.Tensor) -> str:
    """Ids ``(L,)`` as text with each hidden span (``hidden`` ``(L,)``) in brackets: ``t[he] [c]at sat``."""
    h = [False, *hidden.tolist(), False]
    return "".join("[" * (h[i + 1] > h[i]) + vocab.itos[c] + "]" * (h[i + 1] > h[i + 2])
                   for i, c in enumerate(ids.tolist()))


@dataclasses.dataclass(frozen=True)
class Recipe:
    """Sizes and optimisation of one trained variant."""

    sizes: dict
    steps: int
    batch: int
    length: int
    lr: float
    warmup: int


STEPS_DENOISE = 1000
RECIPES: dict[str, Recipe] = {
    "bert": Recipe(dict(d_model=64, num_heads=4, num_layers=2), steps=1500, batch=32, length=64, lr=2e-3, warmup=100),
    "gpt": Recipe(dict(d_model=64, num_heads=4, num_layers=2), steps=1500, batch=32, length=64, lr=3e-3, warmup=100),
    "t5": Recipe(dict(d_model=48, num_heads=4, num_layers=2, d_ff=96, num_buckets=16, max_distance=32),
                 steps=600, batch=64, length=0, lr=3e-3, warmup=50),
    # The two denoisers, one size and one budget, on the same text: BART's text infilling and T5's span
    # corruption (the T5 class again, with sentinels instead of dates).
    "bart": Recipe(dict(d_model=64, num_heads=4, num_layers=2, d_ff=128), steps=STEPS_DENOISE, batch=32, length=64,
                   lr=3e-3, warmup=50),
    "t5_spans": Recipe(dict(d_model=64, num_heads=4, num_layers=2, d_ff=128, num_buckets=16, max_distance=64),
                       steps=STEPS_DENOISE, batch=32, length=64, lr=3e-3, warmup=50),
}


def build(name: str, seed: int = 0):
    """The untrained model of recipe ``name`` (``"bert"``, ``"gpt"``, ``"t5"``, ``"bart"``, ``"t5_spans"``), seeded.

    BART's vocabulary is the characters and one mask id (``len(vocab)``); T5's for span corruption
    the characters and :data:`N_SENTINELS` sentinels from ``len(vocab)`` on."""
    if name not in RECIPES:
        raise ValueError(f"name must be one of {sorted(RECIPES)}, got {name!r}")
    torch.manual_seed(seed)
    r = RECIPES[name]
    if name == "t5":
        V = len(date_vocab())
        return T5(V, **r.sizes, pad_id=CharVocab.PAD, eos_id=CharVocab.EOS, decoder_start_id=CharVocab.BOS)
    V = len(text_corpus()[0])
    if name == "bart":
        return BART(V + 1, **r.sizes, max_len=r.length + 8, pad_id=CharVocab.PAD, eos_id=CharVocab.EOS,
                    decoder_start_id=CharVocab.BOS)
    if name == "t5_spans":
        return T5(V + N_SENTINELS, **r.sizes, pad_id=CharVocab.PAD, eos_id=CharVocab.EOS,
                  decoder_start_id=CharVocab.BOS)
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
    if name in ("bart", "t5_spans"):
        corrupt = text_infilling if name == "bart" else span_corruption

        def batch(step):
            x = windows(train_ids, recipe.batch, recipe.length, seed=seed * 10**6 + step)
            return corrupt(x, V, generator=torch.Generator().manual_seed(seed * 10**6 + step + 1))[:3]

        def loss(model, b):
            src, tin, tout = b
            logits = model(src, tin, src != CharVocab.PAD)  # (B, T, V)
            return F.cross_entropy(logits.flatten(0, 1), tout.flatten())  # IGNORE: T5's padding

        return batch, loss

    def batch(step):  # bert
        x = windows(train_ids, recipe.batch, recipe.length, seed=seed * 10**6 + step)
        return mlm_mask(x, V, V, generator=torch.Generator().manual_seed(seed * 10**6 + step + 1))

    def loss(model, b):
        inputs, targets = b
        return F.cross_entropy(model(inputs).flatten(0, 1), targets.flatten())

    return batch, loss


def train_recipe(name: str, seed: int = 0, *, steps: int | None = None):
    """Train recipe ``name`` from scratch; returns ``(model, log)`` with the loss of every step,
    the processor time, the parameter count and the recipe (``steps``: fewer steps, for tests)."""
    recipe = RECIPES[name] if steps is None else dataclasses.replace(RECIPES[name], steps=steps)
    model = build(name, seed)
    batch, loss = _objective(name, recipe, seed)
    with stopwatch("process") as took:
        losses = _train.train(model, batch, loss, steps=recipe.steps, lr=recipe.lr, warmup=recipe.warmup, seed=seed,
                              progress=False)
    log = dict(name=name, seed=seed, seconds=round(took.seconds, 1),
               threads=torch.get_num_threads(), torch=torch.__version__,
               parameters=sum(p.numel() for p in model.parameters()),
               recipe=dataclasses.asdict(recipe), losses=[round(x, 4) for x in losses])
    if name in ("bart", "t5_spans"):
        log["objective"] = dict(rate=BART_RATE if name == "bart" else T5_RATE, mean_span=MEAN_SPAN,
                                command=f"PYTHONPATH=src python -m scripts.train_variants {name}")
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
