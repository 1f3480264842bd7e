"""The explorers' saved widget state out of the page's HTML (issue 34). Loaded by attn_book.setup.

myst-nb writes the state of every widget of a page into the page itself, as one
``<script type="application/vnd.jupyter.widget-state+json">`` in its head: on the explorers page
about 300 kB of its 320 kB gzipped, which a phone on a slow link must download before it can paint
a line of text. At ``build-finished`` (priority 750: after the steps that rewrite a page's body,
before attn_perf's 800, whose script rewriting leaves the tag below alone since it has no ``src``)
each page's state moves into ``_static/widget-state/<page>-<hash>.json`` of its own edition, and
the tag stays, empty, naming that file::

    <script type="application/vnd.jupyter.widget-state+json" data-url="../_static/widget-state/book-explorers-<hash>.json"></script>

The site's widget runtime (src/attn/book/widgets/static_runtime.js) fetches the file, from the same
host, when the first explorer nears the screen (or once the page is idle) and renders from it. The
tag keeps its type so that "does this page have widgets" stays the same question everywhere. The
file holds the tag's text unchanged: valid JSON (attn_book's sanitize_script_content escapes only
inside strings), so what the runtime reads is byte for byte what myst-nb saved.
"""

from __future__ import annotations

import hashlib
import json
import pathlib
import posixpath
import re

from sphinx.errors import ExtensionError

STATE_TYPE = "application/vnd.jupyter.widget-state+json"
STATE_TAG = re.compile(r'<script type="application/vnd\.jupyter\.widget-state\+json">(.*?)</script>', re.S)
# the attribute the runtime reads; not "...src", which attn_perf's script rewriting would match
URL_ATTR = "data-url"
REFERENCE = re.compile(r'<script type="application/vnd\.jupyter\.widget-state\+json" data-url="([^"]+)"></script>')
FOLDER = "widget-state"


def state_file_name(page: str, data: bytes) -> str:
    """``book/explorers.html`` -> ``book-explorers-<12 hex of the content>.json`` (a new name when the
    state changes, so a cached old file is never used with a new page)."""
    stem = re.sub(r"[^A-Za-z0-9_-]+", "-", page.removesuffix(".html")).strip("-")
    return f"{stem}-{hashlib.sha256(data).hexdigest()[:12]}.json"


def move_widget_state(app, exception) -> None:
    if exception is not None or app.builder.format != "html":
        return
    outdir = pathlib.Path(app.outdir)
    folder = outdir / "_static" / FOLDER
    used = set()
    for page in sorted(outdir.rglob("*.html")):
        rel = page.relative_to(outdir)
        if rel.parts[0] in ("_static", "_sources"):
            continue
        text = page.read_text(encoding="utf-8")
        # a page an incremental build did not write again still names its file from before
        used.update(posixpath.basename(u) for u in REFERENCE.findall(text))
        m = STATE_TAG.search(text)
        if not m:
            continue
        saved = m.group(1).strip()
        try:
            json.loads(saved)
        except ValueError as err:
            raise ExtensionError(f"{rel.as_posix()}: its saved widget state is not JSON ({err})") from err
        data = saved.encode("utf-8")
        name = state_file_name(rel.as_posix(), data)
        folder.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(data)
        used.add(name)
        url = posixpath.relpath((folder / name).as_posix(), page.parent.as_posix())
        text = text[:m.start()] + f'<script type="{STATE_TYPE}" {URL_ATTR}="{url}"></script>' + text[m.end():]
        page.write_text(text, encoding="utf-8")
    # state files of an earlier build that no page names any more
    if folder.is_dir():
        for old in folder.glob("*.json"):
            if old.name not in used:
                old.unlink()


def setup(app):
    app.connect("build-finished", move_widget_state, priority=750)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
