"""The API reference in Chinese (issue 35): the docstrings autodoc shows, translated from one source.

The English docstrings stay in the package's code; their Chinese lives in ``i18n/zh/docstrings/<module>.md``
(one file per module the reference documents), a unit per documented object under a marker
``<!-- doc NAME en:HASH -->`` that names the object as autodoc does (``attn.positional.RotaryEmbedding.forward``)
and holds a hash of the English docstring it translates (:func:`english_hash`: whitespace does not count).
The Chinese edition's configuration names that folder (``attn_docstrings``, written by
``python -m scripts.zh build``); the English edition leaves it unset and is not touched.

In the Chinese build each docstring is replaced before napoleon reads it (so a translation keeps the
``Args:``, ``Returns:``, ``Raises:`` headers, which napoleon renders in Chinese through Sphinx's own
catalogue, and writes ``形状:`` for ``Shape:``). A docstring whose English changed after its translation
(*stale*) or that has none (*missing*) stays English; the build records which, and writes them to
``attn-docstrings.json`` in its doctree folder, which ``python -m scripts.zh docstrings`` turns into units
to translate and tests/test_zh_docstrings.py holds at none.
"""

from __future__ import annotations

import hashlib
import json
import pathlib
import re

MARKER = re.compile(r"^<!-- doc ([A-Za-z0-9_.]+) en:([0-9a-f]{12}) -->[ \t]*$", re.M)
REPORT = "attn-docstrings.json"


def english_hash(text: str) -> str:
    """The hash that ties a translation to the English docstring it translates: its words, not its layout."""
    return hashlib.sha256(" ".join(text.split()).encode("utf-8")).hexdigest()[:12]


def parse(text: str, source: str = "") -> dict[str, tuple[str, str]]:
    """name -> (hash of the English translated, Chinese text) of one file of units (text before the first
    marker, such as a header comment, is not a unit)."""
    marks = list(MARKER.finditer(text))
    units: dict[str, tuple[str, str]] = {}
    for m, nxt in zip(marks, [*marks[1:], None], strict=False):
        name = m.group(1)
        if name in units:
            raise ValueError(f"{source}: the docstring of {name} appears twice")
        units[name] = (m.group(2), text[m.end(): nxt.start() if nxt else len(text)].strip("\n").rstrip())
    return units


def load(folder: pathlib.Path) -> dict[str, tuple[str, str]]:
    """Every unit of every ``*.md`` file in ``folder``."""
    units: dict[str, tuple[str, str]] = {}
    for path in sorted(folder.glob("*.md")):
        for name, unit in parse(path.read_text(encoding="utf-8"), str(path)).items():
            if name in units:
                raise ValueError(f"{path}: the docstring of {name} is also in another file")
            units[name] = unit
    return units


def translate(units: dict[str, tuple[str, str]], name: str, lines: list[str]) -> str:
    """Replace ``lines`` (autodoc's docstring of ``name``) by its translation when it is current; return
    what happened: "translated", "stale" (the English changed since), "missing" or "empty"."""
    english = "\n".join(lines)
    if not english.strip():
        return "empty"
    if name not in units:
        return "missing"
    want, chinese = units[name]
    if want != english_hash(english):
        return "stale"
    lines[:] = [*join_cjk_lines(chinese.split("\n")), ""]
    return "translated"


_CJK = "\u3000-\u303f\u4e00-\u9fff\uff01-\uff5e"
_ARGUMENT = re.compile(r"^\s*\*{0,2}[A-Za-z_][\w, ]*(?: \([^)]*\))?\s*:\s")  # "q: ...", "d_model (int): ..."


def join_cjk_lines(lines: list[str]) -> list[str]:
    """A line break between two Chinese characters is a space to a browser: join such lines of one
    paragraph (the same indentation, or an argument's description continued under it)."""
    out: list[str] = []
    for line in lines:
        prev = out[-1] if out else ""
        indent, prev_indent = len(line) - len(line.lstrip()), len(prev) - len(prev.lstrip())
        same = indent == prev_indent or (indent > prev_indent and _ARGUMENT.match(prev))
        if out and same and re.search(f"[{_CJK}]$", prev) and re.match(f"[{_CJK}]", line.lstrip()):
            out[-1] = prev + line.lstrip()
        else:
            out.append(line)
    return out


def _table(app) -> dict[str, tuple[str, str]]:
    if not hasattr(app, "_attn_docstrings"):
        app._attn_docstrings = load(pathlib.Path(app.confdir, app.config.attn_docstrings))
    return app._attn_docstrings


def process_docstring(app, what, name, _obj, _options, lines) -> None:
    """autodoc-process-docstring, before napoleon: the Chinese docstring where there is a current one."""
    if not app.config.attn_docstrings:
        return
    english = "\n".join(lines)
    status = translate(_table(app), name, lines)
    if status != "empty":
        seen = app.env.__dict__.setdefault("attn_docstrings", {})
        seen.setdefault(app.env.docname, {})[name] = {"what": what, "status": status, "en": english_hash(english),
                                                      "english": english}


def purge(_app, env, docname) -> None:
    env.__dict__.get("attn_docstrings", {}).pop(docname, None)


def merge(_app, env, docnames, other) -> None:
    theirs = other.__dict__.get("attn_docstrings", {})
    env.__dict__.setdefault("attn_docstrings", {}).update({d: theirs[d] for d in docnames if d in theirs})


def write_report(app, exception) -> None:
    """build-finished: every docstring the Chinese pages show, by page, with what happened to it."""
    if exception is not None or not app.config.attn_docstrings:
        return
    from sphinx.util import logging

    seen = app.env.__dict__.get("attn_docstrings", {})
    pathlib.Path(app.doctreedir, REPORT).write_text(json.dumps(seen, ensure_ascii=False, indent=1, sort_keys=True),
                                                    encoding="utf-8")
    counts: dict[str, int] = {}
    for units in seen.values():
        for unit in units.values():
            counts[unit["status"]] = counts.get(unit["status"], 0) + 1
    logging.getLogger(__name__).info("docstrings in Chinese: " + ", ".join(f"{v} {k}" for k, v in sorted(counts.items())))


def setup(app):
    app.add_config_value("attn_docstrings", None, "env")
    app.connect("autodoc-process-docstring", process_docstring, priority=100)  # napoleon: 500
    app.connect("env-purge-doc", purge)
    app.connect("env-merge-info", merge)
    app.connect("build-finished", write_report)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
