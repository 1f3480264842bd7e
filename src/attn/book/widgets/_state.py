"""Helpers shared by the explorers: shaping data for the synced state, and measuring that state.

Everything an explorer shows lives in its synced traits, so the saved notebook (and the static book)
carries it. That state is JSON: tables are rounded to 4 decimals; attention weights, the bulk of it,
are stored 8-bit quantised per row (:func:`quantize_rows`), about 1.4 bytes per weight.
"""

from __future__ import annotations

import base64
import json
import pathlib
import re

import numpy as np
import torch
import traitlets as t

from attn._locale import LANGUAGES, language

HERE = pathlib.Path(__file__).parent
CSS = HERE / "widgets.css"
PARTS = ("_dom.js", "_nn.js")  # files front_end can put in front of an explorer's module
DECIMALS = 4
LIMIT = 1000.0  # largest magnitude of a number a reader types into a live explorer (parseNumber in _dom.js)


STRINGS_ZH = HERE / "strings_zh.json"  # the explorers' words in Chinese: English text -> Chinese (one table)
# A double-quoted JavaScript string literal; the English text given to tr(...) or N_(...) (see _dom.js):
# one literal, or several joined by "+".
_LITERAL = r'"(?:[^"\\\n]|\\.)*"'
MARKED = re.compile(rf'\b(?:tr|N_)\(\s*({_LITERAL}(?:\s*\+\s*{_LITERAL})*)')


def marked_texts(source: str) -> list[str]:
    """The English texts JavaScript ``source`` translates: the literals given to ``tr("...")`` or ``N_("...")``
    (JSON's escapes; literals joined by ``+`` are one text)."""
    return ["".join(json.loads(lit) for lit in re.findall(_LITERAL, found)) for found in MARKED.findall(source)]


def zh_strings() -> dict[str, str]:
    """The explorers' Chinese string table (``strings_zh.json``): English text -> Chinese."""
    return json.loads(STRINGS_ZH.read_text(encoding="utf-8"))


def words_table(source: str) -> str:
    """``const ZH = {...};``: the entries of the Chinese table whose English ``source`` translates."""
    used = set(marked_texts(source))
    table = {k: v for k, v in sorted(zh_strings().items()) if k in used}
    return f"const ZH = {json.dumps(table, ensure_ascii=False, separators=(',', ':'))};\n"


class Lang(t.Unicode):
    """The trait ``lang`` of every explorer: the language its front end writes its words in, "en" or "zh";
    by default :func:`attn._locale.language` when the explorer is made (``attn.set_language`` /
    ``ATTN_LANG``). On the static site the page's own language wins (``static_runtime.js``)."""

    default_value = t.Undefined  # no fixed default: make_dynamic_default, at each explorer made
    info_text = f"one of {list(LANGUAGES)}"

    def make_dynamic_default(self) -> str:
        return language()

    def validate(self, obj, value):
        value = super().validate(obj, value)
        if value not in LANGUAGES:
            raise ValueError(f"lang must be one of {list(LANGUAGES)}, got {value!r}")
        return value


def front_end(name: str, parts: tuple[str, ...] = ("_dom.js",)) -> str:
    """The ES module of the explorer ``name`` (e.g. ``"mask_explorer.js"``): its ``parts``, then the file.

    A widget's module travels as one string in its synced state (``_esm``); JupyterLab, Colab and the
    static book all load it from there, so it cannot import a sibling file. The code the explorers
    share is written once, in files put in front of a module here, in the order given: ``_dom.js``
    (DOM helpers, every explorer) and ``_nn.js`` (the models' maths, for an explorer that computes:
    ``parts=("_dom.js", "_nn.js")``). A part's ``export``s become the module's own. In front of all,
    the Chinese words the module uses (:func:`words_table`).
    """
    unknown = [p for p in parts if p not in PARTS]
    if unknown:
        raise ValueError(f"parts names unknown front-end part(s) {unknown}; known: {sorted(PARTS)}")
    source = "".join((HERE / p).read_text() + "\n" for p in parts) + (HERE / name).read_text()
    return words_table(source) + source


def state_size_bytes(widget) -> int:
    """Size in bytes of ``widget``'s synced state written as JSON (front-end source included).

    This is what a notebook saves for the widget and what the static site embeds, so budget tests
    use it.
    """
    state = widget.get_state()
    return len(json.dumps(state, separators=(",", ":"), ensure_ascii=False).encode("utf-8"))


def as_array(name: str, x) -> np.ndarray:
    """A float64 numpy copy of a tensor, an array or nested lists; errors name ``name``."""
    if isinstance(x, torch.Tensor):
        return x.detach().to("cpu", torch.float64).numpy()
    try:
        a = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError) as e:
        raise TypeError(f"{name} must be a torch.Tensor, a numpy array or nested lists of numbers, got {type(x).__name__}") from e
    if a.dtype == object:
        raise TypeError(f"{name} must be a rectangular array of numbers")
    return a


def rounded(a: np.ndarray) -> list:
    """Nested lists rounded to ``DECIMALS`` (``-0.0`` written as ``0.0``), for the synced state."""
    return (np.round(a, DECIMALS) + 0.0).tolist()


# ----- 8-bit row quantisation of attention weights
#
# Each row x (one query's weights over the S keys) is stored as
#     lo = min(x), hi = max(x)                        float32 (little-endian), one pair per row
#     code[j] = round(255 * (x[j] - lo) / (hi - lo))  uint8 (0 where hi == lo)
# and read back as  x'[j] = lo + code[j] * (hi - lo) / 255.
# Error bound: |x'[j] - x[j]| <= (hi - lo) / 510 (half a step), plus the float32 rounding of lo and hi
# (relative 2**-24). For softmax weights hi - lo <= 1, so the error is <= 1/510 < 1/255. A row's
# smallest and largest values are exact up to float32, so a zero weight (a masked key) stays 0 exactly
# when the row has one, and a fully masked row (all zeros) stays all zeros.
# codes, lo and hi are base64 strings: codes in C order over (layers, heads, L, S), lo/hi over (layers, heads, L).
QUANT_SCHEME = "uint8-row-minmax"


def b64(a: np.ndarray) -> str:
    return base64.b64encode(np.ascontiguousarray(a).tobytes()).decode("ascii")


def quantize_rows(a: np.ndarray) -> dict:
    """8-bit codes per row of ``a`` (last axis), with each row's float32 min and max; JSON-ready.

    Returns:
        ``{"scheme", "shape", "lo", "hi", "codes"}``: ``lo``/``hi`` base64 float32 (little-endian) of shape
        ``a.shape[:-1]``, ``codes`` base64 uint8 of shape ``a.shape``. :func:`dequantize_rows` (and the
        front end's ``decodeWeights``) read it back within ``(hi - lo) / 510`` of ``a`` (see the module).
    """
    a = np.asarray(a, dtype=np.float64)
    lo = a.min(-1).astype("<f4")  # (..., ) stored exactly as it is read back
    hi = a.max(-1).astype("<f4")
    lo64, span = lo.astype(np.float64)[..., None], (hi.astype(np.float64) - lo.astype(np.float64))[..., None]
    safe = np.where(span > 0, span, 1.0)
    codes = np.where(span > 0, np.rint((a - lo64) / safe * 255.0), 0.0).clip(0, 255).astype(np.uint8)
    return {"scheme": QUANT_SCHEME, "shape": [int(n) for n in a.shape], "lo": b64(lo), "hi": b64(hi), "codes": b64(codes)}


def dequantize_rows(q: dict) -> np.ndarray:
    """Float64 array back from :func:`quantize_rows`'s dict (the same arithmetic as the front end)."""
    if q.get("scheme") != QUANT_SCHEME:
        raise ValueError(f"unknown weights encoding {q.get('scheme')!r}, expected {QUANT_SCHEME!r}")
    shape = tuple(q["shape"])
    lo = np.frombuffer(base64.b64decode(q["lo"]), dtype="<f4").astype(np.float64).reshape(shape[:-1] + (1,))
    hi = np.frombuffer(base64.b64decode(q["hi"]), dtype="<f4").astype(np.float64).reshape(shape[:-1] + (1,))
    codes = np.frombuffer(base64.b64decode(q["codes"]), dtype=np.uint8).astype(np.float64).reshape(shape)
    return lo + codes * ((hi - lo) / 255.0)
