"""One generation loop for every decoder in ``attn``, and one ``generate`` that sets it up.

Every model that generates (:class:`attn.models.TokenModel`, :class:`attn.models.Seq2Seq`,
:class:`attn.variants.GPT`, :class:`attn.variants.T5`) inherits the same method from
:class:`GenerationMixin`, shaped like Hugging Face's ``generate``::

    model.generate(prompt, max_new_tokens, *, temperature=None, top_k=None, eos_id=None,
                   pad_id=None, generator=None, use_cache=True)

(an encoder-decoder takes its source as ``prompt`` and adds ``src_key_mask``, ``start_id`` and
``cross_cache``). A model supplies only what is its own: the logits of the decoder on new tokens,
its caches, and, for an encoder-decoder, the encoding of the source. The mixin checks the
arguments, sizes the caches and builds the *step*; :func:`decode` owns the loop. One convention
holds for all of them:

- **Returned:** the decoder's whole sequence, the prompt followed by the new tokens,
  ``(B, P + N)`` with ``N <= max_new_tokens``. The prompt of an encoder-decoder's decoder is its
  start token, so its output starts with ``start_id`` (as in Hugging Face).
- **Choice of the token:** ``temperature`` ``None`` or ``0`` is greedy (argmax); otherwise one
  token is sampled from ``softmax(logits / temperature)``, restricted to the ``top_k`` most likely
  tokens when ``top_k`` is given. ``generator`` seeds the sampling.
- **Stopping:** a row that emits ``eos_id`` is finished; its later positions hold ``pad_id``
  (default ``eos_id``, Hugging Face's fallback too), and generation stops as soon as every row is
  finished. Without ``eos_id`` (or with ``eos_id=-1``, for a model whose configuration names one,
  as T5's does) exactly ``max_new_tokens`` tokens are added.
- **Caches:** with ``use_cache`` (the default) each step sends only the new token through the
  decoder, whose self-attention caches are allocated once for the whole sequence; an
  encoder-decoder also projects the source's keys and values once (``cross_cache=False`` projects
  them again at every step). ``use_cache=False`` recomputes the whole prefix at every step. The
  tokens are the same either way.
- **Checks once per generation:** the arguments, the prompt's token ids and the length against
  the model's positions are checked before the first step; the steps then run unchecked, since
  every token they see was checked or chosen from the vocabulary.
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

__all__ = ["SMALL_STEP_ROWS", "GenerationMixin", "check_arguments", "decode", "next_token"]

SMALL_STEP_ROWS = 8
"""A cached step of at most this many rows (one token each) runs on one thread."""

Step = Callable[[torch.Tensor, int], torch.Tensor]
"""``step(tokens, new)``: ``tokens`` ``(B, T)`` so far, of which the last ``new`` entered since the
previous call -> logits ``(B, V)`` of the token after them."""


def check_arguments(prompt, max_new_tokens, *, temperature=None, top_k=None, eos_id=None, pad_id=None,
                    start_id=None, use_cache=True, cross_cache=True, name: str = "prompt") -> None:
    """Raise a named error for arguments :func:`decode` or :meth:`GenerationMixin.generate` cannot use
    (the token ids' range is the model's to check: it knows its vocabulary)."""
    _checks.tensor(name, prompt)
    if prompt.is_floating_point() or prompt.is_complex() or prompt.dtype == torch.bool:
        raise TypeError(f"{name} must hold integer token ids, got dtype {prompt.dtype}")
    if prompt.dim() != 2 or prompt.shape[1] == 0:
        raise ValueError(f"{name} must have shape (B, P) with P >= 1, got {_checks.fmt(prompt.shape)}")
    _checks.non_negative_int("max_new_tokens", max_new_tokens)
    if temperature is not None:
        _checks.number("temperature", temperature, 0, what=" (0 and None: greedy)")
    if top_k is not None:
        _checks.positive_int("top_k", top_k, " (or None: every token)")
    for arg, value in (("eos_id", eos_id), ("pad_id", pad_id), ("start_id", start_id)):
        if value is not None:
            _checks.integer(arg, value, what=" (a token id, or None)")
    _checks.boolean("use_cache", use_cache)
    _checks.boolean("cross_cache", cross_cache)


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



class GenerationMixin:
    """``generate`` for every decoder in ``attn``, written once (see the module for the convention).

    A model that mixes this in supplies:

    - ``vocab_size``: how many tokens the decoder predicts (the ids ``start_id``, ``eos_id`` and
      ``pad_id`` must name one);
    - ``max_positions``: how many decoder positions it can take, or ``None`` (relative positions);
    - ``new_caches(capacity)``: empty caches for ``capacity`` decoder positions (an encoder-decoder's
      also takes ``cross``: whether to keep the source's keys and values);
    - ``_generation_context(prompt, src_key_mask)``: checks ``prompt``'s token ids against the
      vocabulary they belong to; an encoder-decoder (``is_encoder_decoder = True``) also encodes
      it, and returns what its decoder needs (the memory and its key mask); a decoder-only model
      returns ``None``;
    - ``_decoder_logits(tokens, context, caches, past)``: logits ``(B, T, V)`` of the decoder on
      ``tokens`` ``(B, T)``, the ``past`` tokens before them being in ``caches`` (``None``: no
      cache, ``tokens`` is the whole sequence);
    - ``generation_defaults()``: defaults for ``start_id``, ``eos_id`` and ``pad_id`` (T5 takes
      them from its configuration, as Hugging Face does).
    """

    is_encoder_decoder: bool = False

    def generation_defaults(self) -> dict[str, int | None]:
        """Defaults of ``start_id``, ``eos_id`` and ``pad_id`` (none here)."""
        return {}

    @torch.no_grad()
    def generate(self, prompt: torch.Tensor, max_new_tokens: int, *, temperature: float | None = None,
                 top_k: int | None = None, eos_id: int | None = None, pad_id: int | None = None,
                 generator: torch.Generator | None = None, use_cache: bool = True,
                 src_key_mask: torch.Tensor | None = None, start_id: int | None = None,
                 cross_cache: bool = True) -> torch.Tensor:
        """Continue ``prompt`` ``(B, P)`` by up to ``max_new_tokens`` tokens -> ``(B, P + N)``; for an
        encoder-decoder, decode the source ``prompt`` ``(B, S)`` -> ``(B, 1 + N)``, starting from
        ``start_id``.

        Args:
            temperature, top_k, generator: greedy (``None`` or 0), or sampled (see the module).
            eos_id, pad_id: a row that emits ``eos_id`` is finished and padded with ``pad_id``
                (default ``eos_id``); ``eos_id=-1`` never stops early.
            use_cache: send only the new token through the decoder at each step (``False``:
                recompute the whole prefix; the same tokens, more work).
            src_key_mask: ``(B, S)`` ``True`` on the real source tokens (encoder-decoder only).
            start_id: the decoder's first token (encoder-decoder only; default: the model's).
            cross_cache: project the source's keys and values once (encoder-decoder only, with
                ``use_cache``); ``False`` projects them again at every step.

        Raises:
            TypeError, ValueError: an argument :func:`check_arguments` refuses, token ids outside
                the vocabulary, a sequence longer than the model's positions, or an
                encoder-decoder's argument given to a decoder-only model.
        """
        check_arguments(prompt, max_new_tokens, temperature=temperature, top_k=top_k, eos_id=eos_id, pad_id=pad_id,
                        start_id=start_id, use_cache=use_cache, cross_cache=cross_cache,
                        name="src" if self.is_encoder_decoder else "prompt")
        name = type(self).__name__
        if not self.is_encoder_decoder:
            given = [arg for arg, value, default in (("src_key_mask", src_key_mask, None), ("start_id", start_id, None),
                                                     ("cross_cache", cross_cache, True)) if value is not default]
            if given:
                raise TypeError(f"{name} is a decoder-only model: {', '.join(given)} applies to encoder-decoder "
                                "models only (the prompt is the decoder's own start)")
        defaults = self.generation_defaults()
        start_id = defaults.get("start_id") if start_id is None else start_id
        eos_id = defaults.get("eos_id") if eos_id is None else eos_id
        pad_id = defaults.get("pad_id") if pad_id is None else pad_id
        V = self.vocab_size
        for arg, value in (("start_id", start_id), ("eos_id", eos_id), ("pad_id", pad_id)):
            if value is not None and not (arg == "eos_id" and value == -1):
                _checks.integer(arg, value, 0, V, bounds="[)", high_name="vocab_size")
        if eos_id == -1:  # never stops early: no end token, so nothing is padded either
            eos_id = pad_id = None
        if self.is_encoder_decoder and start_id is None:
            raise ValueError(f"{name}.generate needs start_id, the decoder's first token: {name} has no default one")
        P = 1 if self.is_encoder_decoder else prompt.shape[1]  # the decoder's prompt: the start token, or prompt
        total, limit = P + max_new_tokens, self.max_positions
        if limit is not None and total > limit:
            raise ValueError(f"{'the start token' if self.is_encoder_decoder else f'prompt length {P}'} + max_new_tokens "
                             f"{max_new_tokens} = {total} exceeds the {limit} positions of {name} (max_len)")
        context = self._generation_context(prompt, src_key_mask)  # the prompt's ids checked; a source encoded
        if self.is_encoder_decoder:
            prompt = torch.full((prompt.shape[0], 1), start_id, dtype=torch.long, device=prompt.device)  # (B, 1)
        caches = None
        if use_cache:  # allocated once for the whole sequence, never grown
            caches = self.new_caches(total, cross=cross_cache) if self.is_encoder_decoder else self.new_caches(total)

        def step(tokens: torch.Tensor, new: int) -> torch.Tensor:
            if caches is None:
                return self._decoder_logits(tokens, context, None, 0)[:, -1]  # recompute everything each step
            past = tokens.shape[1] - new
            return self._decoder_logits(tokens[:, -new:], context, caches, past)[:, -1]  # only the new tokens

        return decode(step, prompt, max_new_tokens, temperature=temperature, top_k=top_k, eos_id=eos_id,
                      pad_id=pad_id, generator=generator, cached=use_cache)


def __getattr__(name: str):
    return _moved.attribute(__name__, name)  # names that moved to attn.book, until attn 0.3
