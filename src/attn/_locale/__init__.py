"""The words of the package's output objects in the reader's language: one string table per language.

English is the source: its table is the identity, and an English output is exactly what the code writes.
Another language has a table ``attn/_locale/<lang>.py`` (``STRINGS``: English -> translation) that the
output objects (``attn.book.viz.Table`` and ``Results``, ``attn.diagnose.Report`` and ``Finding``,
``attn.book.exercises.Verdict``) pass their words through (:func:`translate`). The Chinese edition's build
(``scripts/zh.py``) converts the English run's stored outputs through the same table, so their numbers
stay the English run's.

A key of the table is one whole text (a header, a row name, a report's sentence), in three forms:

- the text itself: ``"why it matters"``;
- the text with each number written ``{}``: ``"outputs span {} of {} dimensions"`` matches
  ``"outputs span 28 of 30 dimensions"``, and the numbers go into the translation's ``{}`` in the same order;
- a text with ``{*}`` for any text, translated in its turn: ``"diagnose {*}: all checks passed"``.

A translation has the same ``{}`` and ``{*}`` in the same order (tests/test_zh_outputs.py), so a number can
neither be lost nor moved.

Choose the language with :func:`set_language` (``attn.set_language("zh")``) or the environment variable
``ATTN_LANG`` (read at each output, so a notebook can set it before or after ``import attn``); the default
is English.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import os
import re
import unicodedata

__all__ = ["LANGUAGES", "language", "set_language", "translate", "using", "width"]

#: The languages with a string table (English: the identity).
LANGUAGES = ("en", "zh")

_chosen: str | None = None

#: A number as the outputs write it: 3, 0.25, -1e9, 1e-05, 4.2e+03 (not the 16 of float16 or the 2 of d_2).
NUMBER = re.compile(r"(?<![\w.])[-+]?\d+(?:\.\d+)?(?:e[-+]?\d+)?(?![\w])")
_SLOT = re.compile(r"\{\*?\}")


def language() -> str:
    """The language outputs are written in: the one :func:`set_language` chose, else ``$ATTN_LANG``, else "en"."""
    lang = _chosen or os.environ.get("ATTN_LANG", "").strip().lower() or "en"
    return lang if lang in LANGUAGES else "en"


def set_language(lang: str | None) -> None:
    """Write the package's tables and reports in ``lang`` ("en" or "zh"); ``None`` goes back to ``$ATTN_LANG``.

    Raises:
        ValueError: for a language without a string table.
    """
    global _chosen
    if lang is not None and lang not in LANGUAGES:
        raise ValueError(f"no string table for language {lang!r}; the languages are {list(LANGUAGES)}")
    _chosen = lang


@contextlib.contextmanager
def using(lang: str | None):
    """``with using("zh"):`` outputs in Chinese inside the block, the language before it after."""
    global _chosen
    before = _chosen
    set_language(lang)
    try:
        yield
    finally:
        _chosen = before


@functools.cache
def strings(lang: str) -> dict[str, str]:
    """The string table of ``lang`` (English -> translation); English's is empty (the identity)."""
    if lang == "en":
        return {}
    return dict(importlib.import_module(f"attn._locale.{lang}").STRINGS)


@functools.cache
def _patterns(lang: str) -> list[tuple[re.Pattern, list[str], str]]:
    """The keys with a ``{*}`` slot as patterns, the most specific (longest fixed text) first."""
    out = []
    for key, value in strings(lang).items():
        if "{*}" not in key:
            continue
        parts = _SLOT.split(key)
        slots = _SLOT.findall(key)
        rx = "".join(re.escape(p) + ("" if i == len(slots) else
                                     "(" + (NUMBER.pattern if slots[i] == "{}" else ".+?") + ")")
                     for i, p in enumerate(parts))
        out.append((re.compile(rx, re.S), slots, value, len("".join(parts))))
    out.sort(key=lambda t: -t[3])
    return [(rx, slots, value) for rx, slots, value, _ in out]


def _fill(value: str, slots: list[str], found: list[str], lang: str) -> str:
    """``value`` with its slots filled in order: a number as it is, a text translated in its turn."""
    filled = iter([v if s == "{}" else translate(v, lang) for s, v in zip(slots, found, strict=True)])
    return _SLOT.sub(lambda _: next(filled), value)


def translate(text: str, lang: str | None = None) -> str:
    """``text`` in ``lang`` (default: :func:`language`): its translation from the string table, with the
    numbers of ``text``; ``text`` itself when the language is English or the table has no entry for it."""
    lang = lang or language()
    table = strings(lang)
    if not table or not text or not text.strip():
        return text
    if text in table:
        return table[text]
    numbers = NUMBER.findall(text)
    if numbers:
        key = NUMBER.sub("{}", text)
        if key in table:
            return _fill(table[key], ["{}"] * len(numbers), numbers, lang)
    for rx, slots, value in _patterns(lang):
        m = rx.fullmatch(text)
        if m:
            return _fill(value, slots, list(m.groups()), lang)
    return text


def width(text: str) -> int:
    """How many columns ``text`` takes in a fixed-width font: a Chinese character takes two (``len`` for English)."""
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def ljust(text: str, w: int) -> str:
    """``text.ljust(w)`` counted in columns (:func:`width`)."""
    return text + " " * max(0, w - width(text))


def rjust(text: str, w: int) -> str:
    """``text.rjust(w)`` counted in columns (:func:`width`)."""
    return " " * max(0, w - width(text)) + text
