"""Induction heads: the task, the models, the scores and the ablations of the induction-heads chapter.

A sequence of :data:`LENGTH` letters repeats a random segment of period ``n`` (drawn per sequence in
``[MIN_PERIOD, MAX_PERIOD]``): token ``i`` is ``segment[i mod n]``. The first occurrence (positions
``< n``) is random and cannot be predicted; the repeat (positions ``>= n``) can, by anyone who finds
the earlier occurrence of the current token and copies the token that came after it. A two-layer
attention-only model learns to do that with heads working together across layers: previous-token
heads in layer 0 write "the token before me" into each position, and induction heads in layer 1 look
for the position whose previous token is the current token (the shipped model shares each job
among all four heads of its layer). A one-layer model cannot compose heads: it learns only that the
next letter is one already in the context. The period varies so that no fixed offset does the job.

- :func:`repeated_sequences`: the task; :func:`new_model`: the attention-only model; :func:`train`.
- :func:`split_losses`: next-token loss on the first occurrence and on the repeat;
  :func:`phase_change_step`: when the repeat loss falls; :func:`score_rise_step`: when a kind of head forms.
- :func:`scores_from_weights`, :func:`head_scores`: each head's previous-token and induction score.
- :func:`ablated`, :func:`ablation_table`: silence heads (zero or mean ablation) and measure the loss.
- :func:`load`: the shipped trained two-layer model (``scripts/induction_heads.py`` trains it).
- :func:`char_gpt_induction`: the same measurements on the book's character GPT.

Shapes: ``B`` sequences, ``L`` positions, ``H`` heads, ``E`` width per head.
"""

from __future__ import annotations

import contextlib
import json
import math
from importlib import resources

import torch
import torch.nn.functional as F

from attn import _checks, masks
from attn.attention import MultiHeadAttention, record_attention
from attn.models import TokenModel
from attn.positional import LearnedPositionalEncoding

__all__ = ["CHANCE", "HELD_OUT_SEED", "LENGTH", "MAX_PERIOD", "MIN_PERIOD", "RECIPE", "RISE", "SIZES", "THRESHOLD", "VOCAB", "ablated",
           "ablation_table", "char_gpt_induction", "head_scores", "held_out", "load", "new_model", "phase_change_step", "score_rise_step",
           "repeated_sequences", "scores_from_weights", "split_losses", "train"]

#: The 26 lowercase letters, the tokens of the task (a letter's id is its index).
VOCAB = "abcdefghijklmnopqrstuvwxyz"
#: Positions per sequence, and the range the period ``n`` of each sequence is drawn from.
LENGTH, MIN_PERIOD, MAX_PERIOD = 40, 5, 20
#: The model's sizes (the number of layers is :func:`new_model`'s argument).
SIZES = dict(d_model=64, num_heads=4)
#: The loss of a uniform guess over the letters, ln 26 nats.
CHANCE = math.log(len(VOCAB))
#: The training recipe :func:`train` defaults to (AdamW, linear warm-up then a constant rate), and when
#: it evaluates: every ``fine_every`` steps before step ``fine_until`` (the fall happens there), then
#: every ``eval_every`` steps.
RECIPE = dict(steps=1500, batch=32, lr=3e-3, warmup=50, eval_every=50, fine_every=5, fine_until=600)
#: The seed of the held-out batch the training log is evaluated on (training batches use other seeds).
HELD_OUT_SEED = 12345


def repeated_sequences(batch: int, *, generator: torch.Generator | None = None, length: int = LENGTH,
                       min_period: int = MIN_PERIOD, max_period: int = MAX_PERIOD) -> tuple[torch.Tensor, torch.Tensor]:
    """``batch`` sequences of ``length`` letters, each a random segment repeated: token ``i`` is
    ``segment[i mod n]``, the period ``n`` drawn uniformly in ``[min_period, max_period]`` per sequence.

    Returns ``(tokens, periods)``: ``tokens`` ``(B, L)`` ids in ``[0, 26)``, ``periods`` ``(B,)``.

    Raises:
        ValueError: a non-positive ``batch`` or ``length``, or periods outside ``[1, length]``.
    """
    _checks.positive_int("batch", batch)
    _checks.positive_int("length", length)
    _checks.integer("min_period", min_period, 1, length)
    _checks.integer("max_period", max_period, min_period, length, high_name="length")
    periods = torch.randint(min_period, max_period + 1, (batch,), generator=generator)  # (B,)
    segments = torch.randint(0, len(VOCAB), (batch, max_period), generator=generator)  # (B, max_period)
    index = torch.arange(length)[None, :] % periods[:, None]  # (B, L): i mod n
    return segments.gather(1, index), periods


def held_out(batch: int = 256) -> tuple[torch.Tensor, torch.Tensor]:
    """The held-out sequences (drawn with :data:`HELD_OUT_SEED`, never trained on): ``(tokens, periods)``,
    ``(B, L)`` and ``(B,)``. The training logs, the stored scores and the checkpoints' cards use
    ``held_out(256)``."""
    return repeated_sequences(batch, generator=torch.Generator().manual_seed(HELD_OUT_SEED))


def new_model(num_layers: int = 2) -> TokenModel:
    """The chapter's attention-only model: ``num_layers`` layers of causal self-attention (no
    feed-forward), learned positions, pre-LN, sizes :data:`SIZES`, vocabulary :data:`VOCAB`."""
    _checks.positive_int("num_layers", num_layers)
    D = SIZES["d_model"]
    return TokenModel(len(VOCAB), D, SIZES["num_heads"], num_layers, d_ff=0, max_len=LENGTH, is_causal=True,
                      positional=LearnedPositionalEncoding(D, LENGTH), norm_first=True)


def _target_masks(periods: torch.Tensor, L: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Which targets ``t = 1 .. L - 1`` (predicted at position ``t - 1``) are in the first occurrence
    (``t < n``) and in the predictable repeat (``t > n``): two bool ``(B, L - 1)``."""
    t = torch.arange(1, L)[None, :]  # (1, L - 1)
    n = periods[:, None]  # (B, 1)
    return t < n, t > n


def split_losses(model, tokens: torch.Tensor, periods: torch.Tensor) -> dict[str, float]:
    """Mean next-token loss (nats) of ``model`` on the first occurrence and on the repeat.

    ``first`` averages over the targets at positions ``1 .. n - 1`` (random letters: the best
    possible is chance, ln 26 = 3.26 nats, :data:`CHANCE`); ``repeat`` over the targets at
    positions ``n + 1 .. L - 1``, each a copy of the letter ``n`` places back. The target at ``n``
    (the segment's first letter again) is left out: it is predicted at position ``n - 1``, whose
    letter has not occurred before, and position 0 has no letter before it to find, so nothing in
    the context says which letter comes next.

    Shape: ``tokens`` ``(B, L)``, ``periods`` ``(B,)``.
    """
    _check_batch(tokens, periods)
    with torch.no_grad():
        logits = model(tokens)[:, :-1]  # (B, L - 1, V): position t - 1 predicts target t
    nll = F.cross_entropy(logits.transpose(1, 2), tokens[:, 1:], reduction="none")  # (B, L - 1)
    first, repeat = _target_masks(periods, tokens.shape[1])
    return dict(first=nll[first].mean().item(), repeat=nll[repeat].mean().item())


def _check_batch(tokens, periods) -> None:
    _checks.tensor("tokens", tokens, min_dim=2)
    _checks.tensor("periods", periods)
    if tokens.dim() != 2 or periods.shape != tokens.shape[:1]:
        raise ValueError(f"tokens must be (B, L) and periods (B,), got {_checks.fmt(tokens.shape)} and "
                         f"{_checks.fmt(periods.shape)}")
    _checks.entries("periods", periods, 1, tokens.shape[1] - 1, high_name="L - 1")


def train(num_layers: int = 2, seed: int = 0, *, steps: int = RECIPE["steps"], batch: int = RECIPE["batch"],
          lr: float = RECIPE["lr"], warmup: int = RECIPE["warmup"], eval_every: int = RECIPE["eval_every"],
          fine_every: int = RECIPE["fine_every"], fine_until: int = RECIPE["fine_until"], n_held_out: int = 256):
    """Train :func:`new_model` ``(num_layers)`` from seed ``seed`` on fresh :func:`repeated_sequences`
    (next-token loss on every position): AdamW, a linear warm-up over ``warmup`` steps, then the
    constant rate ``lr``. The training sequences are drawn from a generator seeded by ``seed`` too, so
    two seeds differ in their data as well as in their initialisation.

    Returns ``(model, log)`` (the model in eval mode); ``log`` holds lists ``step``, ``first``,
    ``repeat``: :func:`split_losses` on the ``n_held_out`` sequences of :func:`held_out`, every
    ``fine_every`` steps before ``fine_until``, every ``eval_every`` steps after, and after the last; and ``previous_token``, ``induction``: the
    :func:`head_scores` on the same sequences at the same steps, each a ``(layers, H)`` list of lists.
    """
    for name, value in (("steps", steps), ("batch", batch), ("eval_every", eval_every), ("fine_every", fine_every),
                        ("n_held_out", n_held_out)):
        _checks.positive_int(name, value)
    _checks.non_negative_int("warmup", warmup)
    _checks.non_negative_int("fine_until", fine_until)
    _checks.positive_number("lr", lr)
    torch.manual_seed(seed)
    model = new_model(num_layers)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / max(1, warmup)))
    test = held_out(n_held_out)
    log = dict(step=[], first=[], repeat=[], previous_token=[], induction=[])

    def evaluate(step):
        model.eval()
        losses, scores = _measure(model, *test)
        log["step"].append(step)
        for key, value in (*losses.items(), *scores.items()):
            log[key].append(value.tolist() if isinstance(value, torch.Tensor) else value)
        model.train()

    g = torch.Generator().manual_seed(seed * 10**6 + 1)
    model.train()
    for step in range(steps):
        if step % eval_every == 0 or (step < fine_until and step % fine_every == 0):
            evaluate(step)
        tokens, _ = repeated_sequences(batch, generator=g)
        logits = model(tokens[:, :-1])  # (B, L - 1, V)
        loss = F.cross_entropy(logits.flatten(0, 1), tokens[:, 1:].flatten())
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
    evaluate(steps)
    return model.eval(), log


#: The repeat loss (nats) below which :func:`phase_change_step` says a run has learned to copy: a
#: probability of about e^-1 = 0.37 on the right letter, where chance gives 1/26 and the in-context
#: letter counts a one-layer model can learn stay above 2 nats.
THRESHOLD = 1.0


def _crossing(steps, values, level: float, below: bool, interpolate: bool):
    """The first step at which ``values`` is below (``below``) or above ``level``; with ``interpolate``
    the step where the straight line between the two evaluations that bracket it meets ``level``."""
    for k, (s, v) in enumerate(zip(steps, values, strict=True)):
        if (v < level) if below else (v > level):
            if not interpolate or k == 0:
                return s
            s0, v0 = steps[k - 1], values[k - 1]
            return s0 + (s - s0) * (v0 - level) / (v0 - v)
    return None


def phase_change_step(log: dict, *, threshold: float = THRESHOLD, interpolate: bool = False) -> float | None:
    """The first evaluated step at which the repeat loss is below ``threshold`` nats (default
    :data:`THRESHOLD`, 1 nat); ``None`` if it never is. With ``interpolate``, the step (a float)
    where the straight line between the last evaluation above the threshold and the first below
    it crosses the threshold: finer than the evaluation grid.

    ``log`` as :func:`train` returns it (lists ``step`` and ``repeat`` of one length)."""
    _checks.positive_number("threshold", threshold)
    steps, repeat = log["step"], log["repeat"]
    if len(steps) != len(repeat) or not steps:
        raise ValueError(f"log must hold lists 'step' and 'repeat' of one non-empty length, got {len(steps)} and "
                         f"{len(repeat)}")
    return _crossing(steps, repeat, threshold, True, interpolate)


#: How much a head's score must grow over its value at step 0 for :func:`score_rise_step`: at
#: initialisation attention is nearly uniform, and a score twice the uniform one is a head that prefers
#: its key.
RISE = 2.0


def score_rise_step(log: dict, kind: str, layer: int, *, factor: float = RISE) -> float | None:
    """When the heads of ``kind`` (``"previous_token"`` or ``"induction"``) form in ``layer``: the step
    (interpolated between evaluations, as :func:`phase_change_step`) at which the layer's best head's
    score first exceeds ``factor`` times its step-0 value; ``None`` if it never does.

    ``log`` as :func:`train` returns it (the scores per evaluated step)."""
    if kind not in ("previous_token", "induction"):
        raise ValueError(f"kind must be 'previous_token' or 'induction', got {kind!r}")
    _checks.integer("layer", layer, 0, len(log[kind][0]), bounds="[)", high_name="layers")
    _checks.positive_number("factor", factor)
    best = [max(scores[layer]) for scores in log[kind]]
    return _crossing(log["step"], best, factor * best[0], False, True)


def scores_from_weights(weights: torch.Tensor, periods: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Previous-token and induction scores of each head from its attention weights.

    The previous-token score is the mean weight from query ``i`` to key ``i - 1`` (``i >= 1``). The
    induction score is the mean, over queries ``i`` in the repeat (``i >= n``), of the weight on the
    tokens that came after an earlier occurrence of the current token: keys ``i - n + 1``,
    ``i - 2n + 1``, ... down to 1 (after the first repeat the current token has occurred more than
    once before, and an induction head spreads its weight over every copy). Both average over the
    batch; an ideal head scores 1.

    Shape: ``weights`` ``(B, H, L, L)``, ``periods`` ``(B,)`` -> two ``(H,)``.
    """
    _checks.tensor("weights", weights, min_dim=4)
    if weights.dim() != 4 or weights.shape[2] != weights.shape[3] or periods.shape != weights.shape[:1]:
        raise ValueError(f"weights must be (B, H, L, L) and periods (B,), got {_checks.fmt(weights.shape)} and "
                         f"{_checks.fmt(periods.shape)}")
    B, H, L, _ = weights.shape
    _checks.entries("periods", periods, 1, L - 1, high_name="L - 1")
    i = torch.arange(L)
    prev = weights[:, :, i[1:], i[1:] - 1].mean(dim=(0, 2))  # (H,)
    n = periods[:, None, None]  # (B, 1, 1)
    d = masks.distances(L)[None] + 1  # (1, L, L): i - j + 1, a multiple m n of the period for the keys wanted
    after = (d % n == 0) & (d >= n) & (i >= 1)  # (B, L, L): keys j = i - m n + 1 >= 1, m >= 1
    repeat = (i[None, :] >= periods[:, None]).to(weights.dtype)  # (B, L): queries i >= n
    w = (weights * after[:, None].to(weights.dtype)).sum(-1)  # (B, H, L): weight after earlier occurrences
    induction = (w * repeat[:, None]).sum(dim=(0, 2)) / repeat.sum()  # (H,)
    return prev, induction


def _attentions(model) -> list[MultiHeadAttention]:
    """The model's attention modules, one per layer, in order."""
    return [m for m in model.modules() if isinstance(m, MultiHeadAttention)]


def head_scores(model, tokens: torch.Tensor, periods: torch.Tensor) -> dict[str, torch.Tensor]:
    """Each head's previous-token and induction score (:func:`scores_from_weights`) on ``tokens``.

    Returns ``dict(previous_token=(layers, H), induction=(layers, H))``.
    Shape: ``tokens`` ``(B, L)``, ``periods`` ``(B,)``.
    """
    return _measure(model, tokens, periods)[1]


def _measure(model, tokens, periods) -> tuple[dict[str, float], dict[str, torch.Tensor]]:
    """:func:`split_losses` and :func:`head_scores` from one forward pass."""
    _check_batch(tokens, periods)
    with record_attention(model) as rec:
        losses = split_losses(model, tokens, periods)
    names = [n for n, m in model.named_modules() if isinstance(m, MultiHeadAttention)]
    pairs = [scores_from_weights(rec[n], periods) for n in names]
    return losses, dict(previous_token=torch.stack([p for p, _ in pairs]), induction=torch.stack([s for _, s in pairs]))


def _check_heads(model, heads) -> list[tuple[int, int]]:
    attns = _attentions(model)
    heads = [tuple(h) for h in heads]
    for h in heads:
        if len(h) != 2 or not (0 <= h[0] < len(attns)) or not (0 <= h[1] < attns[h[0]].num_heads):
            raise ValueError(f"heads must be (layer, head) pairs with layer < {len(attns)} and head < "
                             f"{attns[0].num_heads}, got {h}")
    return heads


@contextlib.contextmanager
def ablated(model, heads, kind: str = "zero", reference: torch.Tensor | None = None):
    """Silence the ``(layer, head)`` pairs in ``heads`` inside the ``with`` block; everything is
    restored on exit.

    ``kind="zero"`` sets the head's output to zero (``MultiHeadAttention.head_mask``);
    ``kind="mean"`` replaces it, before ``W_O`` mixes the heads, by its mean over the ``reference``
    token sequences ``(B_ref, L_ref)`` at each position (measured once, on entry, with no head
    ablated): the head still adds its typical output, it just no longer depends on the sequence.
    """
    if kind not in ("zero", "mean"):
        raise ValueError(f"kind must be 'zero' or 'mean', got {kind!r}")
    heads = _check_heads(model, heads)
    attns = _attentions(model)
    saved = [m.head_mask for m in attns]
    hooks = []
    try:
        if kind == "zero":
            for layer, h in heads:
                m = attns[layer]
                if m.head_mask is None:
                    m.head_mask = torch.ones(m.num_heads, device=m.out_proj.weight.device)
                m.head_mask = m.head_mask.clone()
                m.head_mask[h] = 0.0
        else:
            if reference is None:
                raise ValueError("kind='mean' needs reference: token ids (B, L) to average each head's output over")
            _checks.tensor("reference", reference, min_dim=2)
            means = _head_means(model, reference)  # per layer (L_ref, D)
            for layer in sorted({layer for layer, _ in heads}):
                m = attns[layer]
                cols = torch.zeros(m.num_heads, m.d_head, dtype=torch.bool)  # (H, E): the ablated heads' columns
                cols[[h for at, h in heads if at == layer]] = True
                hooks.append(m.out_proj.register_forward_pre_hook(_replace(means[layer], cols.flatten())))
        yield model
    finally:
        for hook in hooks:
            hook.remove()
        for m, mask in zip(attns, saved, strict=True):
            m.head_mask = mask


def _replace(mean: torch.Tensor, cols: torch.Tensor):
    def hook(_module, args):
        (z,) = args  # (B, L, D): the heads' outputs concatenated
        L = z.shape[1]
        if L > len(mean):
            raise ValueError(f"reference has {len(mean)} positions, fewer than the L = {L} of the tokens run "
                             "under mean ablation: average over sequences at least as long")
        return (torch.where(cols, mean[:L].to(z.dtype), z),)

    return hook


def _head_means(model, reference: torch.Tensor) -> list[torch.Tensor]:
    """The input of each layer's ``out_proj`` averaged over the batch: per layer ``(L, D)``."""
    means, hooks = [], []
    for m in _attentions(model):
        hooks.append(m.out_proj.register_forward_pre_hook(lambda _m, args: means.append(args[0].mean(dim=0))))
    try:
        with torch.no_grad():
            model(reference)
    finally:
        for hook in hooks:
            hook.remove()
    return means


def ablation_table(model, tokens: torch.Tensor, periods: torch.Tensor, kind: str = "zero",
                   reference: torch.Tensor | None = None) -> dict:
    """The losses with each head ablated alone (:func:`ablated`; the mean of ``kind="mean"`` is taken
    over ``reference``, by default ``tokens`` themselves).

    Returns ``dict(base=..., base_first=..., repeat=(layers, H), first=(layers, H))``: ``base`` and
    ``base_first`` the unablated repeat and first-occurrence losses, ``repeat`` and ``first`` the
    same with head ``(layer, h)`` ablated (:func:`split_losses`).
    """
    _check_batch(tokens, periods)
    if kind == "mean" and reference is None:
        reference = tokens
    attns = _attentions(model)
    H = attns[0].num_heads
    base = split_losses(model, tokens, periods)
    repeat, first = torch.zeros(len(attns), H), torch.zeros(len(attns), H)
    for layer in range(len(attns)):
        for h in range(H):
            with ablated(model, [(layer, h)], kind, reference):
                losses = split_losses(model, tokens, periods)
            repeat[layer, h], first[layer, h] = losses["repeat"], losses["first"]
    return dict(base=base["repeat"], base_first=base["first"], repeat=repeat, first=first)


def _files():
    return resources.files("attn.book") / "checkpoints"


def load(name: str = "induction"):
    """The shipped trained model ``name`` (``"induction"``: two layers; ``"induction_1layer"``: the
    one-layer control), float32 in eval mode, from its float16 checkpoint. Its card (the JSON beside
    it: recipe, seed, losses after loading) is ``model.card``."""
    if name not in ("induction", "induction_1layer"):
        raise ValueError(f"name must be 'induction' or 'induction_1layer', got {name!r}")
    with (_files() / f"{name}.json").open(encoding="utf-8") as f:
        card = json.load(f)
    model = new_model(card["num_layers"])
    state = torch.load(_files() / f"{name}.pt", map_location="cpu", weights_only=True)
    model.load_state_dict(state)  # float16 on disk, copied into the float32 parameters
    model.card = card
    return model.eval()


def char_gpt_induction(batch: int = 128, seed: int = 0, *, min_period: int = 20, max_period: int = 30) -> dict:
    """The book's trained character GPT (``attn.book.pretraining.load("gpt")``, context 64) on
    repeated random strings of its own lowercase letters (period ``n`` in ``[min_period, max_period]``,
    repeated to fill 64 characters).

    Returns ``dict(previous_token=(layers, H), induction=(layers, H), first=..., repeat=..., chance=...,
    chance_letters=..., periods=(min_period, max_period), batch=...)``: the head scores
    (:func:`scores_from_weights`), the loss on the first occurrence and on the repeat (as
    :func:`split_losses`), the log of the GPT's vocabulary size (a uniform guess over it) and ln 26 (a
    uniform guess over the letters drawn from).
    """
    from attn.book import pretraining

    _checks.positive_int("batch", batch)
    model, log = pretraining.load("gpt")
    vocab = pretraining.text_corpus()[0]
    letters = torch.tensor([vocab.stoi[c] for c in VOCAB])  # the English text has every lowercase letter
    L = log["recipe"]["length"]
    g = torch.Generator().manual_seed(seed)
    ids, periods = repeated_sequences(batch, generator=g, length=L, min_period=min_period, max_period=max_period)
    tokens = letters[ids]  # (B, L): the GPT's ids of the letters
    losses = split_losses(model, tokens, periods)
    scores = head_scores(model, tokens, periods)
    return dict(**scores, **losses, chance=math.log(len(vocab)),
                chance_letters=math.log(len(letters)), periods=(min_period, max_period), batch=batch)
