"""Helpers for the book's chapters that work wherever a chapter runs: the built site, Colab, Binder,
a local JupyterLab, or a plain Python process.

- :func:`glue` records a value for the prose of the built book. With myst-nb installed (the book's
  build environment) it calls ``myst_nb.glue``; elsewhere (Colab installs only ``attn``) it shows
  the value only when asked to, and never fails.
- :func:`require` stops a chapter at its first cell, with one clear message naming the package and
  the install command, when it needs a package that ``attn`` does not install.
- :func:`below` shows a rounding-level number (an error, a leak) by the bound it is checked to stay
  under, because its own digits change with the CPU, the BLAS build and the thread count.

The markdown of a chapter refers to recorded values as ``{glue:text}`name```. Jupyter cannot render
that role, so readers outside the site open a *reader edition* of each chapter, in which every role
is replaced by the value stored in the source notebook (``python -m scripts.notebooks reader``).
"""

from __future__ import annotations

import importlib.util
import os
from typing import Any

__all__ = ["below", "glue", "require", "span"]


def glue(name: str, value: Any, *, display: bool = False) -> None:
    """Record ``value`` under ``name`` for ``{glue:text}`name``` in the chapter's prose.

    In the book's build environment this is ``myst_nb.glue(name, value, display=display)``. Where
    myst-nb is absent (Colab, Binder, a plain install of ``attn``), the value is displayed when
    ``display`` is true and otherwise nothing happens: the reader edition of the chapter already
    carries the value in its prose. Returns ``None``, as myst-nb's glue does: a cell that ends with
    a glue call shows nothing more (returning the value printed it again under the cell).
    """
    if not isinstance(name, str) or not name.isidentifier():
        raise ValueError(f"glue name must be an identifier-like string, got {name!r}")
    if importlib.util.find_spec("myst_nb") is not None:
        from myst_nb import glue as myst_glue

        myst_glue(name, value, display=display)
    elif os.environ.get(RECORDS_VARIABLE) == "1":
        _record(name, value, display=display)
    elif display:
        from IPython.display import display as show

        show(value)


# `make test` runs the chapters with nbval in a fresh environment without myst-nb (what a reader
# installs) and compares every output with the stored one, glue records included. There, and only
# there, this variable is set, and glue writes the record myst-nb's glue writes: the value's display
# data under the keys "application/papermill.record/<mime type>" (the plain keys when `display`),
# with its name in the output's metadata. In Colab the variable is unset: a record would show as
# "no renderer for this output" in some front ends.
RECORDS_VARIABLE = "ATTN_GLUE_RECORDS"
RECORD_PREFIX = "application/papermill.record/"


def _record(name: str, value: Any, *, display: bool) -> None:
    from IPython.core.formatters import format_display_data
    from IPython.display import display as show

    data, metadata = format_display_data(value)
    prefix = "" if display else RECORD_PREFIX
    metadata["scrapbook"] = {"name": name, "mime_prefix": prefix}
    show({prefix + kind: shown for kind, shown in data.items()}, raw=True, metadata=metadata)


def require(package: str, *, pip: str | None = None, why: str = "") -> None:
    """Raise one clear error if ``package`` cannot be imported.

    Args:
        package: the import name (``"transformers"``, ``"sklearn"``).
        pip: what to install (default: the import name), e.g. ``"scikit-learn"``.
        why: what the chapter uses it for, added to the message.
    """
    try:
        found = importlib.util.find_spec(package) is not None
    except ModuleNotFoundError:  # "pkg.sub" whose parent package "pkg" is missing
        found = False
    if found:
        return
    install = pip or package
    reason = f" ({why})" if why else ""
    raise ModuleNotFoundError(
        f"This chapter needs the package {package!r}{reason}, which is not installed here. "
        f"Install it with:  pip install {install}   (in a notebook: %pip install {install}), "
        "then restart the kernel and run the chapter again.",
        name=package,
    )



def below(value: float, bound: float) -> str:
    """Check ``value < bound`` and return the bound as text, e.g. ``"1e-06"``.

    A difference at rounding level (two implementations that agree, an output that does not move)
    has digits that depend on the machine: ``4.8e-07`` here is ``3.6e-07`` on a laptop. What the
    chapter claims, and what every machine reproduces, is that it stays below a bound. Use
    ``glue("err", below(err, 1e-6))`` and write "below {glue:text}`err`" in the prose.

    Raises:
        AssertionError: if ``value`` is not below ``bound`` (or is NaN), naming both.
    """
    value, bound = float(value), float(bound)
    if not value < bound:  # also catches NaN
        raise AssertionError(f"expected a value below {bound:g}, got {value:g}")
    return f"{bound:.0e}"


def span(values, digits: int = 2) -> str:
    """The range of ``values`` as text at ``digits`` decimals: ``"0.45–0.49"`` (an en dash, which reads
    the same in the English and the Chinese prose), or ``"0.47"`` when both ends round alike (a spread
    over seeds, shown at the precision a table gives it)."""
    values = [float(v) for v in values]
    if not values:
        raise ValueError("span needs at least one value, got none")
    lo, hi = f"{min(values):.{digits}f}", f"{max(values):.{digits}f}"
    return lo if lo == hi else f"{lo}–{hi}"


def _show_book_figures() -> None:
    """In an IPython session (a chapter's kernel), show matplotlib figures as the book does from the
    first one on (2x PNGs with their text size, :func:`attn.book.viz.book_figures`), also where a chapter
    draws before it first uses ``attn.book.viz``."""
    import sys

    if "IPython" in sys.modules:
        from attn.book import viz  # noqa: F401 (importing it registers the format)


_show_book_figures()
