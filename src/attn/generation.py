"""One generation loop for every decoder in ``attn``.

Every model that generates (:class:`attn.models.TokenModel`, :class:`attn.models.Seq2Seq`,
:class:`attn.variants.GPT`, :class:`attn.variants.T5`) has the same method, shaped like Hugging
Face's ``generate``::

    model.generate(prompt, max_new_tokens, *, temperature=None, top_k=None, eos_id=None,
                   pad_id=None, generator=None, use_cache=True)

(an encoder-decoder takes its source as ``prompt`` and adds ``src_key_mask`` and ``start_id``).
Each model supplies only a *step*, the logits of the next token; :func:`decode` owns the loop,
and one convention holds for all of them:

- **Returned:** the decoder's whole sequence, the prompt followed by the new tokens,
  ``(B, P + N)`` with ``N <= max_new_tokens``. The prompt of an encoder-decoder's decoder is its
  start token, so its output starts with ``start_id`` (as in Hugging Face).
- **Choice of the token:** ``temperature`` ``None`` or ``0`` is greedy (argmax); otherwise one
  token is sampled from ``softmax(logits / temperature)``, restricted to the ``top_k`` most likely
  tokens when ``top_k`` is given. ``generator`` seeds the sampling.
- **Stopping:** a row that emits ``eos_id`` is finished; its later positions hold ``pad_id``
  (default ``eos_id``, Hugging Face's fallback too), and generation stops as soon as every row is
  finished. Without ``eos_id`` exactly ``max_new_tokens`` tokens are added.
- **Checks once per generation:** the arguments are checked before the first step; the steps
  then run unchecked, since every token they see was checked or chosen from the vocabulary.
- **One thread for small cached steps:** a step that sends one token per row of a small batch
  (at most ``SMALL_STEP_ROWS`` rows) through a cached model is a chain of small operations
  (matrix-vector products, attention for one query), too small to split between threads. Split
  anyway, every fused attention kernel wakes PyTorch's other intra-op threads and waits for them;
  on a busy machine one of them is often descheduled, and the step then waits for milliseconds
  (``benchmarks/kv_cache.py`` measures it). So those steps run with ``torch.set_num_threads(1)``,
  restored when generation ends; the first step (the prompt), larger batches and recomputation
  without a cache keep every thread.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from attn import _checks, _moved, masks

__all__ = ["SMALL_STEP_ROWS", "check_arguments", "decode", "next_token"]

SMALL_STEP_ROWS = 8
"""A cached step of at most this many rows (one token each) runs on one thread."""

Step = Callable[[torch.Tensor, int], torch.Tensor]
"""``step(tokens, new)``: ``tokens`` ``(B, T)`` so far, of which the last ``new`` entered since the
previous call -> logits ``(B, V)`` of the token after them."""


def check_arguments(prompt, max_new_tokens, *, temperature=None, top_k=None, eos_id=None, pad_id=None,
                    start_id=None, name: str = "prompt") -> None:
    """Raise a named error for arguments :func:`decode` cannot use."""
    _checks.tensor(name, prompt)
    if prompt.is_floating_point() or prompt.is_complex() or prompt.dtype == torch.bool:
        raise TypeError(f"{name} must hold integer token ids, got dtype {prompt.dtype}")
    if prompt.dim() != 2 or prompt.shape[1] == 0:
        raise ValueError(f"{name} must have shape (B, P) with P >= 1, got {_checks.fmt(prompt.shape)}")
    if isinstance(max_new_tokens, bool) or not isinstance(max_new_tokens, int) or max_new_tokens < 0:
        raise ValueError(f"max_new_tokens must be a non-negative integer, got {max_new_tokens!r}")
    if temperature is not None and (isinstance(temperature, bool) or not isinstance(temperature, (int, float))
                                    or not temperature >= 0):
        raise ValueError(f"temperature must be None or a number >= 0 (0 and None: greedy), got {temperature!r}")
    if top_k is not None and (isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1):
        raise ValueError(f"top_k must be None or a positive integer, got {top_k!r}")
    for arg, value in (("eos_id", eos_id), ("pad_id", pad_id), ("start_id", start_id)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
            raise TypeError(f"{arg} must be None or an integer token id, got {value!r}")


def next_token(logits: torch.Tensor, temperature: float | None = None, top_k: int | None = None,
               generator: torch.Generator | None = None) -> torch.Tensor:
    """One token per row of ``logits`` ``(B, V)`` -> ``(B,)``: argmax, or a sample (see the module)."""
    if not temperature:  # None or 0: greedy
        return logits.argmax(-1)  # (B,)
    logits = logits / temperature
    if top_k is not None:
        kth = logits.topk(min(top_k, logits.shape[-1]), dim=-1).values[:, -1:]  # (B, 1)
        logits = logits.masked_fill(logits < kth, float("-inf"))
    return torch.multinomial(masks.masked_softmax(logits), 1, generator=generator)[:, 0]  # (B,)


@torch.no_grad()
def decode(step: Step, prompt: torch.Tensor, max_new_tokens: int, *, temperature: float | None = None,
           top_k: int | None = None, eos_id: int | None = None, pad_id: int | None = None,
           generator: torch.Generator | None = None, cached: bool = False) -> torch.Tensor:
    """Continue ``prompt`` ``(B, P)`` with tokens chosen from ``step``'s logits -> ``(B, P + N)``.

    ``step(tokens, new)`` gets the sequence so far ``(B, T)`` (a view of the output, written in
    place: use it before the next call) and how many of its last tokens are new since the previous
    call (``P`` at the first call, then 1); it returns the logits ``(B, V)`` of the next token.
    A cached model feeds only ``tokens[:, -new:]``; a model without cache feeds all of them.
    The convention (greedy or sampled, ``eos_id``, ``pad_id``, early stop) is the module's.
    ``cached``: the steps after the first feed one token per row; with at most ``SMALL_STEP_ROWS``
    rows they run on one thread (see the module).
    """
    check_arguments(prompt, max_new_tokens, temperature=temperature, top_k=top_k, eos_id=eos_id, pad_id=pad_id)
    B, P = prompt.shape
    out = prompt.new_empty(B, P + max_new_tokens)  # allocated once, filled step by step
    out[:, :P] = prompt
    done = None if eos_id is None else torch.zeros(B, dtype=torch.bool, device=prompt.device)
    fill = eos_id if pad_id is None else pad_id
    threads = torch.get_num_threads()
    try:
        for t in range(P, P + max_new_tokens):
            nxt = next_token(step(out[:, :t], P if t == P else 1), temperature, top_k, generator)  # (B,)
            if t == P and cached and B <= SMALL_STEP_ROWS:
                torch.set_num_threads(1)  # from now on one token per step (see the module)
            if done is not None:
                nxt = nxt.masked_fill(done, fill)  # finished rows: pad_id
                done |= nxt == eos_id
            out[:, t] = nxt
            if done is not None and bool(done.all()):
                return out[:, : t + 1]
    finally:
        torch.set_num_threads(threads)
    return out


def __getattr__(name: str):
    return _moved.attribute(__name__, name)  # names that moved to attn.book, until attn 0.3
