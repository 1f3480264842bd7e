"""The book's Sphinx extension for page speed on a phone (issue 34). Loaded by attn_book.setup.

Run after every other step that rewrites the written pages (build-finished, priority 800), it
shortens what a page must fetch and run before its first paint:

* the theme's and extensions' style sheets (nine links, and basic.css behind an @import in one of
  them) become one file, so a phone on a slow link waits for one request instead of two waves of
  them and a third for the import; the book's own attn.css and print sheets stay as they are;
* the scripts in <head> are deferred: they run, in the same order, once the page is parsed,
  instead of stopping the parser one download at a time. ``documentation_options.js`` (13 lines)
  is written into the page instead, because an inline line after it (the theme's
  ``DOCUMENTATION_OPTIONS.pagename = ...``) reads it while the page is parsed;
* the pages carry fewer elements for the browser to style and lay out, with nothing a reader sees
  or copies changed (a chapter has ~10k, the API page ~37k): Pygments' token spans whose colour is
  the code box's own in both colour modes become plain text, a one-word inline literal loses the
  ``<span class="pre">`` inside it (its code element keeps the span's no-wrap), and the page's
  table of contents lists modules and classes, not every function and method of the API;
* the fonts a page draws with start loading as its body starts (load_fonts_early), not when
  the first layout finds them, so that layout already has them and nothing is laid out twice;
* the bundle keeps only the rules that can match: a rule whose every selector names a class or id
  that no page of the site, no script and no saved widget state contains is left out (most of them
  Font Awesome's 2,000 icons and Bootstrap's utilities: 542 -> 152 kB, 89 -> 27 kB gzip, which
  tests/test_lighthouse.py bounds). A class name a script gives an element is in the script's text,
  so a rule a script can switch on stays. Every element's computed style, pseudo-elements included,
  was compared with and without the left-out rules (intro, glossary, search, API, three chapters,
  404; phone and desktop, light and dark, menu and search open): equal on all 49,000 elements.
"""

from __future__ import annotations

import hashlib
import json
import pathlib
import posixpath
import re

import tinycss2
from attn_maths import drawn_families, font_urls

# Style sheets that stay linked on their own: the book's own (tests/test_site.py checks its link;
# 2 kB, fetched in parallel with the bundle). A sheet with a media attribute (print) stays too.
KEEP_CSS = ("attn.css",)
BUNDLE_PREFIX = "attn-bundle-"

HEAD = re.compile(r"<head>.*?</head>", re.S)
STYLESHEET = re.compile(r'[ \t]*<link\b(?=[^>]*\brel="stylesheet")[^>]*>\n?')
HREF = re.compile(r'\bhref="([^"]+)"')
SCRIPT_SRC = re.compile(r'<script\b([^>]*)\bsrc="([^"]+)"([^>]*)></script>')
CSS_URL = re.compile(r"""url\(\s*(['"]?)([^'")]+)\1\s*\)""")
CSS_IMPORT = re.compile(r"""@import\s+(?:url\()?\s*['"]([^'"]+)['"]\s*\)?\s*;""")


def _local(href: str) -> bool:
    return not re.match(r"^([a-z]+:|//|#)", href)


def _css_text(path: pathlib.Path, root: pathlib.Path, target_dir: pathlib.Path, seen: set) -> str:
    """path's CSS with its @imports written in place and its url()s relative to target_dir."""
    if path in seen:
        return ""
    seen.add(path)
    text = path.read_text(encoding="utf-8")
    text = re.sub(r'@charset\s+"[^"]*";', "", text)

    def imported(m: re.Match) -> str:
        if not _local(m.group(1)):
            return m.group(0)
        return _css_text((path.parent / m.group(1).split("?")[0]).resolve(), root, target_dir, seen)

    def moved(m: re.Match) -> str:
        url = m.group(2)
        if not _local(url) or url.startswith("data:"):
            return m.group(0)
        file, _, rest = url.partition("?") if "?" in url else url.partition("#")
        new = posixpath.relpath((path.parent / file).resolve().as_posix(), target_dir.resolve().as_posix())
        sep = "?" if "?" in url else ("#" if "#" in url else "")
        return f"url({m.group(1)}{new}{sep}{rest}{m.group(1)})"

    # the imported sheets' url()s are already relative to target_dir: set them aside while this
    # sheet's own are rewritten
    inlined: list[str] = []

    def aside(m: re.Match) -> str:
        inlined.append(imported(m))
        return f"/*attn-import-{len(inlined) - 1}*/"

    text = CSS_URL.sub(moved, CSS_IMPORT.sub(aside, text))
    return re.sub(r"/\*attn-import-(\d+)\*/", lambda m: inlined[int(m.group(1))], text)


# --- rules that can match (the bundle's unused rules left out) ---

WORD = re.compile(r"-?[A-Za-z_][\w-]*")
SELECTOR_NAME = re.compile(r"([.#])(-?[A-Za-z_](?:[\w-]|\\.)*)")
_NESTED = re.compile(r"\([^()]*\)|\[[^\[\]]*\]|\"[^\"]*\"|'[^']*'")
GROUPING = {"media", "supports", "layer", "container", "document", "-moz-document"}


def site_words(outdir: pathlib.Path) -> set[str]:
    """Every word (a run of letters, digits, _ and -) in the site's pages, scripts and saved widget state:
    a superset of the class names and ids any page has or any script can give an element."""
    words: set[str] = set()
    for path in outdir.rglob("*"):
        if path.suffix in (".html", ".js", ".mjs", ".json") and path.is_file():
            words.update(WORD.findall(path.read_text(encoding="utf-8", errors="replace")))
    return words


def _required_names(selector: str) -> set[str]:
    """The class names and ids an element must have for ``selector`` (one complex selector) to match:
    those outside :not(...), :is(...), attribute brackets and strings, which may match without them."""
    previous = None
    while previous != selector:
        previous, selector = selector, _NESTED.sub(" ", selector)
    return {name.replace("\\", "") for _, name in SELECTOR_NAME.findall(selector)}


def _split_selectors(prelude: str) -> list[str]:
    out, depth, start = [], 0, 0
    for i, ch in enumerate(prelude):
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        if ch == "," and depth == 0:
            out.append(prelude[start:i])
            start = i + 1
    return out + [prelude[start:]]


def _can_match(prelude: str, words: set[str]) -> bool:
    return any(_required_names(sel) <= words for sel in _split_selectors(prelude))


def _kept_rules(nodes: list, words: set[str]) -> list:
    kept = []
    for node in nodes:
        if node.type == "qualified-rule":
            if _can_match(tinycss2.serialize(node.prelude), words):
                kept.append(node)
        elif node.type == "at-rule" and node.lower_at_keyword in GROUPING and node.content is not None:
            inner = _kept_rules(tinycss2.parse_rule_list(node.content, skip_comments=True, skip_whitespace=True), words)
            if inner:
                node.content = [t for rule in inner for t in (rule, tinycss2.ast.WhitespaceToken(0, 0, "\n"))]
                kept.append(node)
        elif node.type in ("qualified-rule", "at-rule"):
            kept.append(node)  # @font-face, @keyframes, @import, @charset, @page: kept whole
    return kept


def purge_unused(css: str, words: set[str]) -> str:
    """``css`` without the rules no element of the site can match (see :func:`site_words`)."""
    rules = _kept_rules(tinycss2.parse_stylesheet(css, skip_comments=True, skip_whitespace=True), words)
    return "\n".join(tinycss2.serialize([r]) for r in rules) + "\n"


def bundle_stylesheets(page: pathlib.Path, head: str, outdir: pathlib.Path, bundles: dict,
                       words: set[str] | None = None) -> str:
    links = []
    for m in STYLESHEET.finditer(head):
        tag = m.group(0)
        href = HREF.search(tag)
        if not href or not _local(href.group(1)) or " media=" in tag:
            continue
        file = (page.parent / href.group(1).split("?")[0]).resolve()
        if file.name in KEEP_CSS or not file.is_file():
            continue
        links.append((tag, file))
    if len(links) < 2:
        return head
    key = tuple(f for _, f in links)
    if key not in bundles:
        static = outdir / "_static"
        text = "\n".join(_css_text(f, outdir, static, set()) for f in key)
        text = (purge_unused(text, words) if words is not None else text) + SLIM_CSS
        name = f"{BUNDLE_PREFIX}{hashlib.sha256(text.encode()).hexdigest()[:12]}.css"
        (static / name).write_text(text, encoding="utf-8")
        bundles[key] = static / name
    href = posixpath.relpath(bundles[key].as_posix(), page.parent.as_posix())
    first, *rest = (tag for tag, _ in links)
    head = head.replace(first, f'    <link rel="stylesheet" href="{href}" />\n', 1)
    for tag in rest:
        head = head.replace(tag, "", 1)
    return head


def defer_scripts(page: pathlib.Path, head: str) -> str:
    def deferred(m: re.Match) -> str:
        before, src, after = m.groups()
        attrs = before + after
        if re.search(r"\b(defer|async)\b|type=\"module\"", attrs) or not _local(src):
            return m.group(0)
        if src.split("?")[0].endswith("documentation_options.js"):
            file = page.parent / src.split("?")[0]
            if file.is_file():
                return f"<script>{file.read_text(encoding='utf-8').strip()}</script>"
            return m.group(0)
        return f'<script{before}defer src="{src}"{after}></script>'

    return SCRIPT_SRC.sub(deferred, head)


# Fewer elements. Each rule below keeps what a reader sees and copies; tests/test_perf_pages.py
# checks the look on pages and the copied code.

# Appended to the bundle: the look the removed spans gave, now on the element that keeps the text.
SLIM_CSS = """
/* attn_perf: a code box whose plain token spans became text shows that text in the box's own
   colour (pygments.css's .highlight rule), as the spans did, not in the theme's colour for pre. */
div.highlight > pre.attn-plain { color: inherit; }
/* attn_perf: a one-word inline literal without its span.pre keeps that span's look (basic.css's
   span.pre; _ext/attn_book.css lets it wrap on a phone). */
code.literal.pre { white-space: nowrap; hyphens: none; }
@media (max-width: 640px) { .bd-article code.literal.pre { white-space: normal; } }
"""

# copybutton_exclude's classes (prompts and output, left out of what the copy button copies) and
# the line numbers keep their spans whatever their colour.
KEEP_TOKENS = {"gp", "go", "linenos", "hll"}
PYGMENTS_RULE = re.compile(
    r'(?:^|\})\s*(?:html\[data-theme="(\w+)"\] )?\.highlight(?: \.([\w-]+))? \{([^}]*)\}', re.M)
CODE_BOX = re.compile(r'<div class="highlight"><pre>(.*?)</pre>', re.S)
TOKEN = re.compile(r'<span class="([\w-]+)">([^<]*)</span>')
TAG = re.compile(r"<[^>]*>")


def _declarations(text: str) -> tuple:
    return tuple(sorted(" ".join(d.split()).lower() for d in text.split(";") if d.strip()))


def token_colours(css: str) -> tuple[set, set]:
    """From pygments.css: the token classes drawn exactly like the code box's own text, and those
    with a colour of their own, each in every colour mode the sheet has."""
    base: dict = {}
    rules: dict = {}
    for m in PYGMENTS_RULE.finditer(css):
        theme, cls, decls = m.group(1) or "", m.group(2), _declarations(m.group(3))
        if cls is None:
            colour = [d for d in decls if d.startswith("color:")]
            base[theme] = colour[0] if colour else None
        else:
            rules.setdefault(cls, {})[theme] = decls
    themes = set(base)
    plain = {c for c, r in rules.items() if c not in KEEP_TOKENS and set(r) == themes
             and all(base[t] and r[t] == (base[t],) for t in themes)}
    coloured = {c for c, r in rules.items() if set(r) == themes
                and all(any(d.startswith("color:") and d != "color: inherit" for d in r[t]) for t in themes)}
    return plain, coloured


def flatten_code(html: str, plain: set, coloured: set) -> str:
    """Pygments' spans of the plain classes written as text. Only in a box where nothing else
    takes the pre element's colour, which becomes the box's: no visible bare text, and every
    other span colours itself."""
    def box(m: re.Match) -> str:
        body = m.group(1)
        left = TOKEN.sub(lambda t: "" if t.group(1) in plain else t.group(0), body)
        if (TAG.sub("", TOKEN.sub("", left)).strip()
                or any(c not in coloured for c in TOKEN_CLASS.findall(left))
                or not any(c in plain for c in TOKEN_CLASS.findall(body))):
            return m.group(0)
        flat = TOKEN.sub(lambda t: t.group(2) if t.group(1) in plain else t.group(0), body)
        return f'<div class="highlight"><pre class="attn-plain">{flat}</pre>'

    return CODE_BOX.sub(box, html)


TOKEN_CLASS = re.compile(r'<span class="([^"]*)"')
# docutils writes each word of an inline literal (and of a signature's names) as an unbreakable
# <span class="pre">; one alone in its parent gives the parent its class instead (basic.css's
# span.pre rule then applies to a span parent as it did to the child; SLIM_CSS to a code one).
SOLE_PRE = re.compile(r'<(span|code) class="([^"]*)"><span class="pre">([^<]*)</span></\1>')


def merge_pre(html: str) -> str:
    def merged(m: re.Match) -> str:
        tag, cls, text = m.groups()
        if tag == "code" and "literal" not in cls.split():
            return m.group(0)
        return f'<{tag} class="{cls} pre">{text}</{tag}>'

    return SOLE_PRE.sub(merged, html)


# the theme's page contents (the secondary sidebar) and sphinx-book-theme's copy for print
PAGE_TOC = re.compile(r'(<nav (?:id="pst-page-toc-nav"|aria-label="Page")[^>]*>)(.*?)(</nav>)', re.S)
PY_OBJECT = re.compile(r'<dl class="py (\w+)">\s*<dt class="sig sig-object py"[^>]*\bid="([^"]+)"')
TOC_ITEM = re.compile(r"<li\b[^>]*>|</li>")
KEEP_IN_TOC = {"class", "exception"}


def trim_page_toc(html: str) -> str:
    """The page's table of contents (both copies) without its entries for documented functions,
    methods and attributes (the API page's 831 of 938): it lists the sections, modules and classes,
    and the page's body what each holds."""
    drop = {oid for kind, oid in PY_OBJECT.findall(html) if kind not in KEEP_IN_TOC}
    if not drop:
        return html

    def trimmed(m: re.Match) -> str:
        toc = m.group(2)
        open_at, cuts = [], []
        for item in TOC_ITEM.finditer(toc):
            if item.group(0) != "</li>":
                open_at.append(item.start())
                continue
            start = open_at.pop()
            href = re.match(r'<li\b[^>]*>\s*<a\b[^>]*\bhref="#([^"]+)"', toc[start:item.end()])
            if href and href.group(1) in drop:
                cuts.append((start, item.end()))
        kept, pos = [], 0
        for start, end in sorted(cuts):
            if start >= pos:  # (one inside an entry already cut goes with it)
                kept.append(toc[pos:start])
                pos = end
        kept.append(toc[pos:])
        toc = re.sub(r"<ul\b[^>]*>\s*</ul>", "", "".join(kept))
        return m.group(1) + toc + m.group(3)

    return PAGE_TOC.sub(trimmed, html)


# The theme's icon fonts (Font Awesome, font-display: block, in _static): the header's icons on every page.
# The faces scripts/assets.py cuts down; fa-regular-400 draws no icon of the header.
THEME_FONTS = ["vendor/fontawesome/webfonts/fa-solid-900.woff2", "vendor/fontawesome/webfonts/fa-brands-400.woff2"]
BODY = re.compile(r"<body\b[^>]*>")
EARLY_FONTS_ID = "attn-fonts"


def load_fonts_early(html: str, loads: list[str], preloads: list[str]) -> str:
    """``html`` with a script right after ``<body>`` that starts loading the page's fonts: ``loads`` by
    document.fonts.load (CSS font shorthands: a font written into the page, nothing to fetch), ``preloads``
    (URLs) by <link rel=preload> elements it adds.

    Found by the first layout, a font arrives after the first paint, and the page is styled and laid out
    again (on a chapter, long tasks of 100-160 ms on this machine, ~4x that on Lighthouse's phone). Started
    here, the loads run while the page is parsed and the first layout has the fonts. Not a <link rel=preload>
    written in <head>: Chromium holds the first paint for those (see attn_maths.FONTS_EARLY); one added once
    the body exists holds nothing. The cost, in Lighthouse's simulation: the requests end at the priority of a
    font the layout needs (VeryHigh, preloaded or not), which it counts as blocking the first paint: kept
    small by attn_maths.subset_fonts (book/api/positional's nine fonts 141 -> 71 kB). Without scripts the
    fonts load as before."""
    if not (loads or preloads) or f'id="{EARLY_FONTS_ID}"' in html:
        return html
    script = (f'<script id="{EARLY_FONTS_ID}">(function(d){{{json.dumps(loads, ensure_ascii=True)}.forEach(function(f){{'
              f'd.fonts&&d.fonts.load(f)}});{json.dumps(preloads, ensure_ascii=True)}.forEach(function(u){{'
              'var l=d.createElement("link");l.rel="preload";l.as="font";l.crossOrigin="anonymous";l.href=u;'
              'd.head.appendChild(l)})})(document)</script>')
    return BODY.sub(lambda m: m[0] + script, html, count=1)


def page_fonts(page: pathlib.Path, text: str, outdir: pathlib.Path) -> tuple[list[str], list[str]]:
    """(fonts written into the page, URLs of fonts to fetch) that ``page`` draws with: its maths's
    (attn_maths.drawn_families) and the theme's icons."""
    urls, families = font_urls(text), drawn_families(text)
    drawn = [urls[f] for f in families if f in urls]
    loads = [f"1em {f}" for f in families if urls.get(f, "").startswith("data:")]
    theme = [posixpath.relpath((outdir / "_static" / f).as_posix(), page.parent.as_posix())
             for f in THEME_FONTS if (outdir / "_static" / f).is_file()]
    return loads, [u for u in drawn if not u.startswith("data:")] + theme


def slim_page(html: str, plain: set, coloured: set) -> str:
    return trim_page_toc(merge_pre(flatten_code(html, plain, coloured)))


def speed_up_pages(app, exception) -> None:
    if exception is not None or app.builder.format != "html":
        return
    outdir = pathlib.Path(app.outdir)
    bundles: dict = {}
    linked = set()
    pygments = outdir / "_static" / "pygments.css"
    plain, coloured = token_colours(pygments.read_text(encoding="utf-8")) if pygments.is_file() else (set(), set())
    words = site_words(outdir)
    for page in sorted(outdir.rglob("*.html")):
        if "_static" in page.relative_to(outdir).parts:
            continue
        text = page.read_text(encoding="utf-8")
        m = HEAD.search(text)
        if not m:
            continue
        head = defer_scripts(page, bundle_stylesheets(page, m.group(0), outdir, bundles, words))
        body = load_fonts_early(slim_page(text[m.end():], plain, coloured), *page_fonts(page, text, outdir))
        new = text[:m.start()] + head + body
        if new != text:
            page.write_text(new, encoding="utf-8")
        linked.update(re.findall(BUNDLE_PREFIX + r"[0-9a-f]+\.css", head))
    # bundles of an earlier build that no page links any more (a page an incremental build did not
    # write again still links its own)
    for old in (outdir / "_static").glob(BUNDLE_PREFIX + "*.css"):
        if old.name not in linked:
            old.unlink()


def setup(app):
    app.connect("build-finished", speed_up_pages, priority=800)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
