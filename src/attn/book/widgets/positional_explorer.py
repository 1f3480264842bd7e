"""PositionalEncodingExplorer: a positional table, how positions resemble each other, and one pair of
dimensions turning on the unit circle as the position moves.

Any table ``(positions, D)`` plugs in (``encodings={name: table}``); the default is
:func:`attn.positional.sinusoidal_table`. The front end (``positional_explorer.js``) computes the plots
from the table in the synced state (rounded to 4 decimals), so it answers the sliders offline.
"""

from __future__ import annotations

from collections.abc import Mapping

import anywidget
import torch
import traitlets as t

from attn import _checks
from attn.positional import sinusoidal_table
from attn.book.widgets._state import CSS, Lang, as_array, front_end, rounded

__all__ = ["PositionalEncodingExplorer"]


class PositionalEncodingExplorer(anywidget.AnyWidget):
    """Heatmap of ``PE``, the profile ``PE[p] . PE[p + k]`` against ``k``, and ``(PE[p, 2i+1], PE[p, 2i])``.

    Args:
        table: one encoding table ``(positions, D)`` (torch or numpy), shown under ``name`` (default
            ``"table"``; ``"sinusoidal"`` for the default table).
        encodings: several tables ``{name: table}``, chosen with a selector (instead of ``table``).
        max_len, d_model, base: the default sinusoidal table when neither is given (64 x 32).
        position: the position ``p`` shown first. pair: the dimension pair ``i`` (columns ``2i, 2i+1``).

    Shape:
        each table is ``(positions, D)``: row ``p`` is the vector added to the token at position ``p``.
    """

    _esm = front_end("positional_explorer.js")
    _css = CSS
    lang = Lang().tag(sync=True)  # the language of its words: "en" or "zh" (attn.set_language)

    encodings = t.Dict().tag(sync=True)  # name -> (positions, D) nested lists, 4 decimals
    names = t.List(t.Unicode()).tag(sync=True)  # the tables' order as given (a saved notebook sorts dict keys)
    encoding = t.Unicode().tag(sync=True)
    position = t.Int(0).tag(sync=True)
    pair = t.Int(0).tag(sync=True)

    def __init__(
        self,
        table=None,
        *,
        encodings: Mapping[str, object] | None = None,
        name: str | None = None,
        max_len: int = 64,
        d_model: int = 32,
        base: float = 10000.0,
        position: int = 0,
        pair: int = 0,
        encoding: str | None = None,
    ):
        if table is not None and encodings is not None:
            raise ValueError("pass either table or encodings={name: table}, not both")
        if encodings is None:
            if table is None:
                encodings = {name or "sinusoidal": sinusoidal_table(max_len, d_model, base)}
            else:
                encodings = {name or "table": table}
        tables = _check(encodings)
        encoding = next(iter(tables)) if encoding is None else encoding
        if encoding not in tables:
            raise ValueError(f"encoding={encoding!r} is not one of the tables given: {list(tables)}")
        P, D = len(tables[encoding]), len(tables[encoding][0])
        _checks.integer("position", position, 0, P, bounds="[)", what=f" (a row of the {encoding!r} table of shape ({P}, {D}))")
        _checks.integer("pair", pair, 0, max(1, D // 2), bounds="[)", what=f" (a sin/cos pair of the {encoding!r} table, D={D})")
        super().__init__(encodings=tables, names=list(tables), encoding=encoding, position=position, pair=pair)

    def table(self, name: str | None = None) -> torch.Tensor:
        """The table held (rounded to 4 decimals), float32 ``(positions, D)``; default: the one shown."""
        return torch.tensor(self.encodings[name or self.encoding], dtype=torch.float32)

    def similarity(self, position: int | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """``(offsets k, PE[p] . PE[p + k])`` for every ``k`` with ``0 <= p + k < positions`` (float64)."""
        T = torch.tensor(self.encodings[self.encoding], dtype=torch.float64)  # (P, D)
        p = self.position if position is None else position
        return torch.arange(T.shape[0]) - p, T @ T[p]  # (P,), (P,)

    def update(self, table=None, *, encodings: Mapping[str, object] | None = None, name: str = "table") -> None:
        """Replace the tables live (checked first); the position and pair are kept where they still fit."""
        if (table is None) == (encodings is None):
            raise ValueError("update() takes exactly one of table or encodings={name: table}")
        tables = _check({name: table} if encodings is None else encodings)
        enc = self.encoding if self.encoding in tables else next(iter(tables))
        P, D = len(tables[enc]), len(tables[enc][0])
        with self.hold_sync():
            self.encodings, self.names, self.encoding = tables, list(tables), enc
            self.position, self.pair = min(self.position, P - 1), min(self.pair, max(0, D // 2 - 1))

    def __repr__(self) -> str:
        P, D = len(self.encodings[self.encoding]), len(self.encodings[self.encoding][0])
        return f"PositionalEncodingExplorer(encodings={self.names}, shown={self.encoding!r}, shape=({P}, {D}))"


def _check(encodings: Mapping[str, object]) -> dict[str, list]:
    if not isinstance(encodings, Mapping) or not encodings:
        raise ValueError(f"encodings must be a non-empty mapping {{name: table}}, got {type(encodings).__name__}")
    out = {}
    for name, table in encodings.items():
        a = as_array(f"encodings[{name!r}]", table)
        if a.ndim != 2 or 0 in a.shape:
            raise ValueError(f"encodings[{name!r}] must have shape (positions, D), got {_checks.fmt(a.shape)}")
        if not (abs(a) < float("inf")).all():
            raise ValueError(f"encodings[{name!r}] contains NaN or infinite values (shape {_checks.fmt(a.shape)})")
        out[str(name)] = rounded(a)
    return out
