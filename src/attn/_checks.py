"""Input checks shared by the package: each error names the argument, what it got and what it needs.

One place for each rule (a test in tests/test_repo.py keeps inline copies out of the other modules):
a count or an index is an ``int``, a rate or a duration a finite number, and in neither is a
``bool`` a number (``True == 1``, so ``MultiHeadAttention(8, True)`` would otherwise build one head).
"""

from __future__ import annotations

import math

import torch

Shape = tuple[int, ...]


def fmt(shape) -> str:
    """``(2, 3, 4)`` for a shape, so messages read the same everywhere."""
    return "(" + ", ".join(str(int(s)) for s in shape) + ")"


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _show(x) -> str:
    return f"{x:g}" if isinstance(x, float) else str(x)


def _interval(low, high, bounds: str, high_name: str) -> str:
    """What a range check needs, for its message: ``in [0, L=4]``, ``in [0, 1)``, ``at least 4``."""
    if low is None and high is None:
        return ""
    if high is None:
        return f"{'more than' if bounds[0] == '(' else 'at least'} {_show(low)}"
    if low is None:
        return f"{'less than' if bounds[1] == ')' else 'at most'} {_show(high)}"
    return f"in {bounds[0]}{_show(low)}, {high_name + '=' if high_name else ''}{_show(high)}{bounds[1]}"


def _inside(value, low, high, bounds: str) -> bool:
    """``low <= value <= high`` (``<`` at an open end); for a tensor, whether every entry is."""
    if isinstance(value, torch.Tensor):
        return _inside(value.min().item(), low, high, bounds) and _inside(value.max().item(), low, high, bounds)
    above = low is None or (value > low if bounds[0] == "(" else value >= low)
    below = high is None or (value < high if bounds[1] == ")" else value <= high)
    return above and below


def _range(kind: str, ok, name: str, value, low, high, bounds: str, high_name: str, what: str):
    """The one range rule: ``value`` is of ``kind`` (``ok(value)``) and lies between the bounds."""
    if ok(value) and _inside(value, low, high, bounds):
        return value  # the message is built only for a value that fails (attend checks dropout_p per call)
    if bounds not in ("[]", "[)", "(]", "()"):
        raise ValueError(f"bounds must be one of '[]', '[)', '(]', '()', got {bounds!r}")
    need = _interval(low, high, bounds, high_name)
    if not ok(value):
        sep = " " if need.startswith("in ") else ", " if need else ""
        raise ValueError(f"{name} must be {kind}{sep}{need}{what}, got {value!r}")
    both = low is not None and high is not None
    raise ValueError(f"{name} must {'lie' if both else 'be'} {need}{what}, got {value!r}")


def positive_int(name: str, value, what: str = "") -> int:
    """``value`` as a count: an ``int`` >= 1 (``True`` is not a count). ``what`` says what it counts,
    e.g. ``" (the number of sequences)"``. Returns ``value``."""
    if not _is_int(value) or value < 1:
        raise ValueError(f"{name} must be a positive integer{what}, got {value!r}")
    return value


def non_negative_int(name: str, value, what: str = "") -> int:
    """``value`` as an index or an offset: an ``int`` >= 0 (not a bool). Returns ``value``."""
    if not _is_int(value) or value < 0:
        raise ValueError(f"{name} must be a non-negative integer{what}, got {value!r}")
    return value


def integer(name: str, value, low: int | None = None, high: int | None = None, *, bounds: str = "[]",
            high_name: str = "", what: str = "") -> int:
    """``value`` as an ``int`` (not a bool) between ``low`` and ``high``; ``None`` leaves that side
    open, ``bounds`` says which ends belong (``"[)"`` for an index below ``high``) and ``high_name``
    names the upper bound in the message. ``integer("prefix", 5, 0, 4, high_name="L")`` raises
    "prefix must lie in [0, L=4], got 5". Returns ``value``."""
    return _range("an integer", _is_int, name, value, low, high, bounds, high_name, what)


def number(name: str, value, low: float | None = None, high: float | None = None, *, bounds: str = "[]",
           what: str = "") -> float:
    """``value`` as a finite ``int`` or ``float`` (not a bool) between ``low`` and ``high``, as
    :func:`integer`. Returns ``value``."""
    return _range("a number", _is_number, name, value, low, high, bounds, "", what)


def positive_number(name: str, value, what: str = "") -> float:
    """A finite ``int`` or ``float`` > 0 (not a bool). Returns ``value``."""
    if not _is_number(value) or value <= 0:
        raise ValueError(f"{name} must be a positive number{what}, got {value!r}")
    return value


def probability(name: str, value, what: str = "") -> float:
    """A probability of dropping something, in ``[0, 1)`` (``1`` would drop everything), as
    ``dropout_p``. Returns ``value``."""
    return number(name, value, 0, 1, bounds="[)", what=what)


def boolean(name: str, value) -> bool:
    """``True`` or ``False``, not a value that merely converts to one (``1``, ``"no"``). Returns ``value``."""
    if not isinstance(value, bool):
        raise ValueError(f"{name} must be True or False, got {value!r}")
    return value


def entries(name: str, t: torch.Tensor, low: int, high: int, *, bounds: str = "[]", high_name: str = "",
            what: str = "") -> torch.Tensor:
    """Every entry of the integer tensor ``t`` between ``low`` and ``high``, as :func:`integer`; the
    message shows the entries (their range when there are more than 16). Returns ``t``."""
    if t.numel() and not _inside(t, low, high, bounds):
        got = t.tolist() if t.numel() <= 16 else f"entries from {int(t.min())} to {int(t.max())}"
        raise ValueError(f"{name} must lie {_interval(low, high, bounds, high_name)}{what}, got {got}")
    return t


def divisible(name: str, value: int, by: int, *, by_name: str = "", why: str = "") -> int:
    """``value`` a multiple of ``by``: "d_model (10) must be divisible by num_heads (3)" when
    ``by_name`` names the divisor, else "d_head must be even" (``by == 2``) or "must be a multiple
    of 4". ``why`` follows. Returns ``value // by``."""
    if value % by:
        if by_name:
            raise ValueError(f"{name} ({value}) must be divisible by {by_name} ({by}){why}")
        need = "even" if by == 2 else f"a multiple of {by}"
        raise ValueError(f"{name} must be {need}{why}, got {name}={value}")
    return value // by


def heads(d_model: int, num_heads: int, *, names: tuple[str, str] = ("d_model", "num_heads")) -> int:
    """The one heads rule: ``d_model`` and ``num_heads`` positive integers, ``num_heads`` dividing
    ``d_model``, so each head gets a whole number of dimensions. ``names``: the two as the caller
    calls them (``("D", "H")``). Returns the head width ``d_model // num_heads``."""
    D, H = names
    positive_int(H, num_heads)
    positive_int(D, d_model)
    return divisible(D, d_model, num_heads, by_name=H, why=(
        f": each head gets {D} / {H} = {d_model / num_heads:g} dimensions, which is not an integer"))


def tensor(name: str, x, *, min_dim: int = 1) -> None:
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
    if x.dim() < min_dim:
        raise ValueError(f"{name} must have at least {min_dim} dimensions, got shape {fmt(x.shape)}")


def floating(name: str, x: torch.Tensor) -> None:
    if not x.is_floating_point():
        raise TypeError(f"{name} must be a floating-point tensor, got dtype {x.dtype}")


def last_dim(name: str, x: torch.Tensor, expected: int, what: str) -> None:
    if x.shape[-1] != expected:
        raise ValueError(
            f"{name} has last dimension {x.shape[-1]} (shape {fmt(x.shape)}), expected {expected} ({what})"
        )


def non_empty(name: str, x: torch.Tensor, dim: int, what: str) -> None:
    if x.shape[dim] == 0:
        raise ValueError(f"{name} has an empty {what} dimension (shape {fmt(x.shape)}); attention over nothing is undefined")


def qkv(q, k, v) -> tuple[int, int, tuple[int, ...]]:
    """Queries ``(..., L, E)``, keys ``(..., S, E)`` and values ``(..., S, Ev)`` of one floating dtype,
    non-empty, with batch dimensions that broadcast. Returns ``(L, S, batch)``."""
    for name, x in (("q", q), ("k", k), ("v", v)):
        tensor(name, x, min_dim=2)
        floating(name, x)
    if not (q.dtype == k.dtype == v.dtype):
        raise TypeError(f"q, k and v must share one dtype, got {q.dtype}, {k.dtype} and {v.dtype}")
    E = q.shape[-1]
    last_dim("k", k, E, "q and k must have the same last dimension E")
    if k.shape[-2] != v.shape[-2]:
        raise ValueError(
            f"k and v must have the same source length S: k has shape {fmt(k.shape)}, "
            f"v has shape {fmt(v.shape)}"
        )
    non_empty("q", q, -2, "query length L")
    non_empty("k", k, -2, "source length S")
    non_empty("q", q, -1, "embedding E")
    batch = q.shape[:-2]
    if not (batch == k.shape[:-2] == v.shape[:-2]):  # the common case needs no broadcasting
        try:
            batch = torch.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
        except RuntimeError:
            raise ValueError(
                f"the batch dimensions of q {fmt(q.shape)}, k {fmt(k.shape)} and "
                f"v {fmt(v.shape)} do not broadcast"
            ) from None
    return q.shape[-2], k.shape[-2], tuple(batch)


def mask(name: str, m, target: Shape) -> None:
    """A mask is bool (True = may attend) or floating (additive) and broadcasts to ``target``."""
    if not isinstance(m, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(m).__name__}")
    if m.dtype != torch.bool and not m.is_floating_point():
        raise TypeError(
            f"{name} must be bool (True = may attend) or floating point (added to the scores), got dtype {m.dtype}"
        )
    try:
        ok = torch.broadcast_shapes(m.shape, target) == torch.Size(target)
    except RuntimeError:
        ok = False
    if not ok:
        raise ValueError(f"{name} of shape {fmt(m.shape)} cannot broadcast to the scores' shape {fmt(target)} (..., L, S)")


def token_ids(name: str, tokens, vocab_size: int, *, what: str = "vocab_size") -> torch.Tensor:
    """``tokens`` as ids of a vocabulary of ``vocab_size`` entries (``what`` names that size in the
    message, e.g. ``"type_vocab_size"``): an integer tensor with every entry in ``[0, vocab_size)``.
    One pass over the tensor finds both ends. Returns ``tokens``."""
    tensor(name, tokens)
    if tokens.is_floating_point() or tokens.is_complex() or tokens.dtype == torch.bool:
        raise TypeError(f"{name} must hold integer token ids, got dtype {tokens.dtype}")
    if tokens.numel():
        low, high = (int(t) for t in torch.aminmax(tokens))
        if low < 0 or high >= vocab_size:
            raise ValueError(f"{name} must lie in [0, {what}={vocab_size}), got ids from {low} to {high}")
    return tokens
