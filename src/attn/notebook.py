"""Helpers for the book's chapters that work wherever a chapter runs: the built site, Colab, Binder,
a local JupyterLab, or a plain Python process.

- :func:`glue` records a value for the prose of the built book. With myst-nb installed (the book's
  build environment) it calls ``myst_nb.glue``; elsewhere (Colab installs only ``attn``) it shows
  the value only when asked to, and never fails.
- :func:`require` stops a chapter at its first cell, with one clear message naming the package and
  the install command, when it needs a package that ``attn`` does not install.
- :func:`device` is the one place a chapter's tensors and models take their device from.

The markdown of a chapter refers to recorded values as ``{glue:text}`name```. Jupyter cannot render
that role, so readers outside the site open a *reader edition* of each chapter, in which every role
is replaced by the value stored in the source notebook (``python scripts/notebooks.py reader``).
"""

from __future__ import annotations

import importlib.util
import os
from typing import Any

import torch

__all__ = ["device", "glue", "require"]


def glue(name: str, value: Any, *, display: bool = False) -> Any:
    """Record ``value`` under ``name`` for ``{glue:text}`name``` in the chapter's prose.

    In the book's build environment this is ``myst_nb.glue(name, value, display=display)``. Where
    myst-nb is absent (Colab, Binder, a plain install of ``attn``), the value is displayed when
    ``display`` is true and otherwise nothing happens: the reader edition of the chapter already
    carries the value in its prose. Returns ``value`` so a cell can keep using it.
    """
    if not isinstance(name, str) or not name.isidentifier():
        raise ValueError(f"glue name must be an identifier-like string, got {name!r}")
    if importlib.util.find_spec("myst_nb") is not None:
        from myst_nb import glue as myst_glue

        myst_glue(name, value, display=display)
    elif display:
        from IPython.display import display as show

        show(value)
    return value


def require(package: str, *, pip: str | None = None, why: str = "") -> None:
    """Raise one clear error if ``package`` cannot be imported.

    Args:
        package: the import name (``"transformers"``, ``"sklearn"``).
        pip: what to install (default: the import name), e.g. ``"scikit-learn"``.
        why: what the chapter uses it for, added to the message.
    """
    if importlib.util.find_spec(package) is not None:
        return
    install = pip or package
    reason = f" ({why})" if why else ""
    raise ModuleNotFoundError(
        f"This chapter needs the package {package!r}{reason}, which is not installed here. "
        f"Install it with:  pip install {install}   (in a notebook: %pip install {install}), "
        "then restart the kernel and run the chapter again.",
        name=package,
    )


def device() -> torch.device:
    """The device the chapters run on: ``$ATTN_DEVICE`` if set (``"cuda"``, ``"mps"``), else the CPU.

    The stored outputs of the book come from the CPU. The chapters' models are tiny, so the CPU is
    the default even on a GPU runtime; set ``ATTN_DEVICE=cuda`` to move them (numbers then differ
    in the last digits, and timings differ a lot).
    """
    name = os.environ.get("ATTN_DEVICE", "cpu")
    try:
        dev = torch.device(name)
    except RuntimeError as e:
        raise ValueError(f"ATTN_DEVICE={name!r} is not a device name torch understands ({e})") from None
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ValueError("ATTN_DEVICE=cuda, but torch sees no CUDA device here (torch.cuda.is_available() is False)")
    return dev
