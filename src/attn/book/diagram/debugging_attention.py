"""Figures of "Debugging attention": which check catches which bug.

- :func:`check_grid`: the bugs of the chapter's zoo (rows) against the checks of
  :func:`attn.diagnose.check` (columns). Every mark is a finding of a report the chapter computed by
  running the checks on that bug: a filled mark where the check failed (it catches the bug), an
  empty cell where it passed, a dash where it did not run (causality runs only on a causal layer).
"""

from __future__ import annotations

from collections.abc import Mapping

import matplotlib.pyplot as plt

from attn.book import viz as _viz  # noqa: F401 (in a notebook, importing it sets the book's figure format)
from attn.book.diagram.draw import INPUT, grid, note

__all__ = ["CAUGHT", "NOT_RUN", "PASSED", "check_grid"]

CAUGHT = "#e76f51"  # the check failed: it catches the bug
PASSED = INPUT  # the check passed: it does not see this bug
NOT_RUN = "#d9d9d9"  # the check did not run on this layer
_MARK = {False: "✗", True: "", None: "–"}


def _findings(name: str, report) -> dict[str, bool | None]:
    """``{check: passed}`` of one report (``passed`` is ``None`` for a finding that only informs)."""
    findings = getattr(report, "findings", None)
    if findings is None:
        raise TypeError(f"reports[{name!r}] must be an attn.diagnose.Report, got {type(report).__name__}")
    return {f.name: f.passed for f in findings}


def check_grid(reports: Mapping[str, object], *, checks: list[str] | tuple[str, ...] | None = None,
               figsize: tuple[float, float] | None = None):
    """Draw which check catches which bug, from the reports of :func:`attn.diagnose.check`.

    Args:
        reports: ``{bug name: report}``, one row per bug in the order given; each report is what
            ``diagnose.check`` returned for a layer with that bug.
        checks: the columns, in order; default: every check that appears in some report, in the
            order of the report that ran the most checks.
        figsize: the figure size in inches; default: sized to the grid.

    Returns:
        The matplotlib ``Figure`` (one axes, no ticks). Cell ``(bug, check)`` is ``CAUGHT`` with a
        ``✗`` where that report's finding failed, ``PASSED`` (empty) where it passed, ``NOT_RUN`` with
        a ``–`` where the check did not run or only informed. A count under each column says how many
        bugs the check catches. The cell patches carry the gids ``cell-<row>-<column>``.

    Raises:
        ValueError: if ``reports`` is empty or ``checks`` names a check that no report ran.
        TypeError: if a report is not an ``attn.diagnose.Report``.
    """
    if not isinstance(reports, Mapping) or not reports:
        raise ValueError("reports must be a non-empty mapping {bug name: diagnose report}, got "
                         f"{reports!r:.80}")
    rows = {name: _findings(name, report) for name, report in reports.items()}
    if checks is None:
        longest = max(rows.values(), key=len)
        checks = list(longest) + [c for r in rows.values() for c in r if c not in longest]
        checks = list(dict.fromkeys(checks))
    else:
        checks = list(checks)
        unknown = [c for c in checks if not any(c in r for r in rows.values())]
        if not checks or unknown:
            raise ValueError(f"checks must name checks the reports ran, got unknown {unknown or checks}; "
                             f"known: {sorted({c for r in rows.values() for c in r})}")
    n_rows, n_cols, cell = len(rows), len(checks), 0.5
    status = [[r.get(c) for c in checks] for r in rows.values()]
    colours = [[{False: CAUGHT, True: PASSED, None: NOT_RUN}[s] for s in row] for row in status]
    texts = [[_MARK[s] for s in row] for row in status]
    label_w = 3.4  # room for the bugs' names, left of the grid
    width, height = label_w + n_cols * cell + 0.9, n_rows * cell + 2.7
    if figsize is None:
        figsize = (width * 0.95, height * 0.95)
    fig, ax = plt.subplots(figsize=figsize, constrained_layout=True)
    ax.set_xlim(-label_w, n_cols * cell + 0.9)
    ax.set_ylim(-n_rows * cell - 1.1, 1.6)
    ax.set_aspect("equal")
    ax.axis("off")
    grid(ax, 0.0, 0.0, n_rows, n_cols, colours, cell=cell, texts=texts, fontsize=10)
    for k, patch in enumerate(ax.patches):
        patch.set_gid(f"cell-{k // n_cols}-{k % n_cols}")
    for i, name in enumerate(rows):
        ax.text(-0.12, -(i + 0.5) * cell, name, ha="right", va="center", fontsize=8)
    for j, check in enumerate(checks):
        ax.text((j + 0.5) * cell, 0.1, check, ha="left", va="bottom", rotation=45, fontsize=8)
        caught = sum(row[j] is False for row in status)
        ax.text((j + 0.5) * cell, -n_rows * cell - 0.25, str(caught), ha="center", va="center", fontsize=8,
                fontweight="bold")
    note(ax, -0.12, -n_rows * cell - 0.25, "bugs caught", ha="right")
    note(ax, -label_w + 0.1, -n_rows * cell - 0.8,
         "✗ (orange): the check fails on this bug, it catches it.  empty: it passes.\n"
         "– (grey): not run (causality runs on causal layers only)")
    return fig
