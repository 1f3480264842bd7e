"""Toy data generated offline, deterministic for a seed. Every task knows its own ground truth
(the right answer, and where the model *should* look), so chapters can measure what a model learned.

- :func:`kv_recall`: a task that needs two attention relations (previous token, matching key).
- :func:`kv_sum`: the same two relations, both needed at the same position (forces heads apart).
- :class:`DateTask`: "29 November 2026" -> "2026-11-29", with the true character alignment.
- :func:`english_text` / :class:`CharVocab`: real English from CPython's documentation (``pydoc_data``),
  frozen in the package.
- :func:`last_write`: "repeat the most recent value written", a task whose answer lies a bounded
  distance back at every length (for extrapolation experiments).
- :func:`previous_token`: "output the token before this one", which only order can solve.
"""

from __future__ import annotations

import calendar
import dataclasses
import random

import torch

from attn import _checks

__all__ = ["IGNORE", "CharVocab", "DateTask", "KVRecall", "delayed_copy", "english_text", "kv_recall", "kv_sum", "last_write",
           "previous_token"]

IGNORE = -100  # label for positions that carry no target (the default ignore_index of cross_entropy)


def _check_task(n, task) -> None:
    _checks.positive_int("n", n, " (the number of sequences)")
    if not isinstance(task, KVRecall):
        raise TypeError(f"task must be a KVRecall, got {type(task).__name__}")
    task.__post_init__()  # sizes checked again, in case the frozen task was altered


# --- key-value recall: two relations -------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class KVRecall:
    """Sizes of the recall task. Tokens: ``num_keys * num_values`` pair tokens (key, value), then
    ``num_keys`` query tokens (key only)."""

    num_keys: int = 8
    num_values: int = 8
    num_queries: int = 4

    def __post_init__(self) -> None:
        for name in ("num_keys", "num_values", "num_queries"):
            _checks.positive_int(name, getattr(self, name))
        if self.num_queries > self.num_keys:
            raise ValueError(
                f"num_queries ({self.num_queries}) must not exceed num_keys ({self.num_keys}): each query asks "
                "for a different key"
            )

    @property
    def vocab_size(self) -> int:
        return self.num_keys * self.num_values + self.num_keys

    @property
    def seq_len(self) -> int:
        return self.num_keys + self.num_queries

    def pair(self, key: int, value: int) -> int:
        return key * self.num_values + value

    def query(self, key: int) -> int:
        return self.num_keys * self.num_values + key

    def describe(self, token: int) -> str:
        if token >= self.num_keys * self.num_values:
            return f"{chr(65 + token - self.num_keys * self.num_values)}?"
        k, v = divmod(token, self.num_values)
        return f"{chr(65 + k)}{v}"


def kv_recall(n: int, task: KVRecall = KVRecall(), *, seed: int = 0):
    """``n`` sequences of the recall task.

    A sequence holds every key once with a random value, in random order (pair tokens such as
    ``C5``), then ``num_queries`` query tokens (``C?``). Targets, per position:

    - a pair token at position ``i >= 1``: the *value of the previous token* (relation 1: look at
      position ``i - 1``); position 0 has no target;
    - a query token: the value paired with its key (relation 2: find the matching key).

    Returns:
        ``tokens`` ``(n, T)`` long, ``targets`` ``(n, T)`` long (``-100`` = no target), and
        ``kind`` ``(n, T)``: 0 none, 1 previous-token target, 2 matching-key target.
    """
    _check_task(n, task)
    g = torch.Generator().manual_seed(seed)
    K, V, Q = task.num_keys, task.num_values, task.num_queries
    keys = torch.argsort(torch.rand(n, K, generator=g), dim=1)  # (n, K) order of the keys
    values = torch.randint(0, V, (n, K), generator=g)  # (n, K) value of each key (by key id)
    vals_in_order = values.gather(1, keys)
    pairs = keys * V + vals_in_order  # (n, K)
    qkeys = torch.stack([torch.randperm(K, generator=g)[:Q] for _ in range(n)])  # (n, Q)
    queries = K * V + qkeys
    tokens = torch.cat([pairs, queries], dim=1)  # (n, T)
    targets = torch.full_like(tokens, IGNORE)
    kind = torch.zeros_like(tokens)
    targets[:, 1:K] = vals_in_order[:, :-1]
    kind[:, 1:K] = 1
    targets[:, K:] = values.gather(1, qkeys)
    kind[:, K:] = 2
    return tokens, targets, kind


# --- dates: a toy translation task ---------------------------------------------------------------

class CharVocab:
    """Characters <-> ids, with ``<pad>`` = 0, ``<s>`` = 1, ``</s>`` = 2."""

    PAD, BOS, EOS = 0, 1, 2

    def __init__(self, chars: str):
        self.itos = ["<pad>", "<s>", "</s>", *sorted(set(chars))]
        self.stoi = {c: i for i, c in enumerate(self.itos)}

    def __len__(self) -> int:
        return len(self.itos)

    def encode(self, text: str, *, bos: bool = False, eos: bool = False) -> list[int]:
        missing = sorted(set(text) - set(self.stoi))
        if missing:
            raise ValueError(f"characters not in the vocabulary: {missing}")
        return [self.BOS] * bos + [self.stoi[c] for c in text] + [self.EOS] * eos

    def decode(self, ids) -> str:
        out = []
        for i in (ids.tolist() if isinstance(ids, torch.Tensor) else ids):
            if i == self.EOS:
                break
            if i not in (self.PAD, self.BOS):
                out.append(self.itos[i])
        return "".join(out)


class DateTask:
    """Source "29 November 2026", target "2026-11-29" (ISO 8601), years 1950-2049.

    ``alignment(src, tgt)`` gives, for each target character, the source characters it comes from
    (digits copy digits; the month digits come from the month's name; hyphens from nothing).
    """

    MONTHS = list(calendar.month_name)[1:]

    def __init__(self):
        self.src_vocab = CharVocab("0123456789 " + "".join(self.MONTHS))
        self.tgt_vocab = CharVocab("0123456789-")

    def sample(self, n: int, *, seed: int = 0) -> list[tuple[str, str]]:
        rng = random.Random(seed)
        out = []
        for _ in range(n):
            y, m = rng.randint(1950, 2049), rng.randint(1, 12)
            d = rng.randint(1, calendar.monthrange(y, m)[1])
            out.append((f"{d} {self.MONTHS[m - 1]} {y}", f"{y:04d}-{m:02d}-{d:02d}"))
        return out

    def alignment(self, src: str, tgt: str) -> torch.Tensor:
        """``(len(tgt), len(src))`` 0/1 matrix: which source characters produce each target one."""
        day, month, year = src.split(" ")
        A = torch.zeros(len(tgt), len(src))
        m0 = len(day) + 1
        y0 = m0 + len(month) + 1
        for t in range(4):  # year digits copy the year digits
            A[t, y0 + t] = 1
        A[5:7, m0 : m0 + len(month)] = 1  # month digits: the month's name
        if len(day) == 2:
            A[8, 0], A[9, 1] = 1, 1
        else:  # "7" -> "07": the leading zero and the digit both come from the day
            A[8, 0], A[9, 0] = 1, 1
        return A

    def batch(self, pairs: list[tuple[str, str]]):
        """Pad to tensors: ``src`` ``(B, S)``, ``tgt_in`` ``(B, T)`` (starts with <s>),
        ``tgt_out`` ``(B, T)`` (ends with </s>), ``src_lengths`` ``(B,)``."""
        src = [self.src_vocab.encode(s) for s, _ in pairs]
        tgt = [self.tgt_vocab.encode(t) for _, t in pairs]
        S = max(map(len, src))
        T = max(map(len, tgt)) + 1
        pad = CharVocab.PAD
        src_t = torch.tensor([s + [pad] * (S - len(s)) for s in src])
        tin = torch.tensor([[CharVocab.BOS] + t + [pad] * (T - 1 - len(t)) for t in tgt])
        tout = torch.tensor([t + [CharVocab.EOS] + [pad] * (T - 1 - len(t)) for t in tgt])
        return src_t, tin, tout, torch.tensor([len(s) for s in src])


# --- real English --------------------------------------------------------------------------------

def english_text(max_chars: int | None = None) -> str:
    """English prose from the Python documentation topics (``pydoc_data``, PSF licence), lower-cased,
    with whitespace collapsed and only letters, digits and basic punctuation kept.

    The text is frozen in the package (``attn/book/texts/english.txt.gz``, 409,405 characters, written from
    CPython 3.11's ``pydoc_data`` by ``scripts/english_text.py``): each Python release ships other
    topics, and the chapters' numbers and the trained checkpoints must not change with the Python a
    reader runs.
    """
    import gzip
    from importlib import resources

    text = gzip.decompress(resources.files("attn.book").joinpath("texts/english.txt.gz").read_bytes()).decode("ascii")
    return text if max_chars is None else text[:max_chars]


# --- last write: an order task whose difficulty does not grow with length -----------------------

def last_write(n: int, length: int, *, num_values: int = 8, num_fillers: int = 8, p_write: float = 0.15,
               seed: int = 0):
    """``n`` sequences of a recency task (a simplified flip-flop language, Liu et al., 2023).

    Each position holds a *write* token (a value ``0 .. num_values - 1``) with probability
    ``p_write``, else a *filler* token (``num_values .. num_values + num_fillers - 1``); position 0
    is always a write. At every filler position the target is the value of the most recent write:
    content says which tokens are writes, only order says which write is the latest. The distance
    back to that write is geometric whatever the length, so longer sequences are not harder in
    themselves.

    Returns:
        ``tokens`` ``(n, length)`` long; ``targets`` ``(n, length)`` long (``-100`` at writes, which
        carry no target); ``source`` ``(n, length)`` long, the position of the most recent write
        (where the model should look).
    """
    _checks.positive_int("n", n, " (the number of sequences)")
    _checks.positive_int("length", length)
    _checks.positive_int("num_values", num_values)
    _checks.positive_int("num_fillers", num_fillers)
    _checks.number("p_write", p_write, 0, 1, bounds="(]", what=" (the probability of a write)")
    g = torch.Generator().manual_seed(seed)
    write = torch.rand(n, length, generator=g) < p_write  # (n, length)
    write[:, 0] = True
    values = torch.randint(0, num_values, (n, length), generator=g)
    fillers = torch.randint(num_values, num_values + num_fillers, (n, length), generator=g)
    tokens = torch.where(write, values, fillers)
    positions = torch.arange(length).expand(n, length)
    source = torch.where(write, positions, torch.zeros_like(positions)).cummax(dim=1).values  # latest write so far
    targets = tokens.gather(1, source).masked_fill(write, IGNORE)
    return tokens, targets, source


# --- key-value sum: two relations needed at the same position ------------------------------------

def kv_sum(n: int, task: KVRecall = KVRecall(), *, seed: int = 0):
    """``n`` sequences of a recall task in which every target needs *both* relations of
    :func:`kv_recall` at once.

    A sequence holds the ``num_keys`` pair tokens of :func:`kv_recall` (``C5``), then
    ``num_queries`` times a *digit* token ``d`` (``0 .. num_values - 1``, token id
    ``task.vocab_size + d``) followed by a query token (``C?``). The target at a query is
    ``value of its key + d`` (``0 .. 2 * num_values - 2``), where ``d`` is the digit just before
    it: the model must look at position ``i - 1`` (relation 1) *and* at the pair token with the
    matching key (relation 2). No other position has a target. The vocabulary has
    ``task.vocab_size + task.num_values`` tokens; the length is ``num_keys + 2 * num_queries``.
    (The sum is not taken modulo ``num_values``: then either relation alone would say nothing
    about the target, and gradient descent gets no signal to find the first of the two.)

    Returns:
        ``tokens`` ``(n, T)`` long, ``targets`` ``(n, T)`` long (``-100`` = no target), and
        ``kind`` ``(n, T)``: 0 no target, 3 a target that needs relations 1 and 2 (3 = 1 | 2).
    """
    _check_task(n, task)
    g = torch.Generator().manual_seed(seed)
    K, V, Q = task.num_keys, task.num_values, task.num_queries
    keys = torch.argsort(torch.rand(n, K, generator=g), dim=1)  # (n, K) order of the keys
    values = torch.randint(0, V, (n, K), generator=g)  # (n, K) value of each key (by key id)
    pairs = keys * V + values.gather(1, keys)  # (n, K)
    qkeys = torch.stack([torch.randperm(K, generator=g)[:Q] for _ in range(n)])  # (n, Q)
    digits = torch.randint(0, V, (n, Q), generator=g)  # (n, Q)
    tail = torch.stack([task.vocab_size + digits, K * V + qkeys], dim=2).flatten(1)  # (n, 2Q): d1 q1 d2 q2 ...
    tokens = torch.cat([pairs, tail], dim=1)  # (n, K + 2Q)
    targets = torch.full_like(tokens, IGNORE)
    kind = torch.zeros_like(tokens)
    targets[:, K + 1 :: 2] = values.gather(1, qkeys) + digits
    kind[:, K + 1 :: 2] = 3
    return tokens, targets, kind


# --- previous token and delayed copy: order alone gives the answer ---------------------------------

def previous_token(n: int, length: int, vocab: int, *, seed: int = 0):
    """``n`` random sequences of ``length`` tokens from ``vocab``; the target at every position is
    the token one step before it (position 0 has none). Which token that is, the content does not
    say; only order does.

    Returns:
        ``tokens`` ``(n, length)`` long and ``targets`` ``(n, length)`` long (``-100`` at position 0).
    """
    _checks.positive_int("n", n, " (the number of sequences)")
    _checks.positive_int("length", length)
    _checks.positive_int("vocab", vocab, " (the number of token ids)")
    g = torch.Generator().manual_seed(seed)
    tokens = torch.randint(0, vocab, (n, length), generator=g)  # (n, length)
    targets = torch.full_like(tokens, IGNORE)
    targets[:, 1:] = tokens[:, :-1]  # the previous token
    return tokens, targets


def delayed_copy(n: int, length: int, delay: int, *, vocab_size: int = 16, seed: int = 0):
    """Random tokens; the target at position ``t >= delay`` is the token at ``t - delay``
    (``-100`` before: ``IGNORE``). Returns ``tokens`` and ``targets``, ``(n, length)`` long; ``delay >= 1``."""
    _checks.positive_int("n", n)
    _checks.positive_int("length", length)
    _checks.positive_int("delay", delay)
    _checks.positive_int("vocab_size", vocab_size)
    g = torch.Generator().manual_seed(seed)
    tokens = torch.randint(0, vocab_size, (n, length), generator=g)
    targets = torch.full_like(tokens, IGNORE)
    targets[:, delay:] = tokens[:, :-delay]
    return tokens, targets
