"""Sphinx extension for the book: make embedded widget state safe to put inside <script> tags.

myst-nb writes each page's widget state as JSON inside ``<script type="application/vnd.jupyter.
widget-state+json">`` and escapes only the exact text ``</script>``. An HTML parser ends the
script at ``</SCRIPT>``, ``</script >`` or ``</Script`` too, and treats ``<!--`` specially, so a
token such as ``</SCRIPT>`` shown by a widget would cut the state short and break the page (or
let the rest be parsed as HTML). Escaping every ``</`` and ``<!--`` keeps the content the same
for JSON and JavaScript readers (``<\\/`` and ``\\u003c!--`` decode to the same characters).
"""

from __future__ import annotations

import re

_CLOSE = re.compile(r"</", flags=re.IGNORECASE)


def sanitize_script_content(content: str) -> str:
    return _CLOSE.sub(r"<\\/", content).replace("<!--", "\\u003c!--")


def setup(app):
    from myst_nb.core import render

    render.sanitize_script_content = sanitize_script_content
    return {"parallel_read_safe": True, "parallel_write_safe": True}
