"""The whole book as one PDF per edition, printed by Chromium from the built site (no TeX).

    python -m scripts.pdf [SITE]      # default: the repository; reads SITE/_build/html (make pdf)

For each edition (English at the site's root, Chinese under zh/), the chapters' articles are put
into one HTML document in the book's order (the edition's _toc.yml): a title page, the contents,
then each part and chapter. Every id is prefixed with its chapter's name so that ids stay unique,
and each link to another chapter becomes a link inside the document, so the PDF's links work
offline; a link out of the book goes to the published site. Headings move one level down under the
part headings, and Chromium's tagged PDF turns them into the outline (bookmarks). The footer holds
the page numbers. The maths comes as the site has it: typeset at build time (its style sheet is
taken from the page) or by the site's own MathJax, which is waited for. An explorer is live only on
the site: its place says so, with the address.

The PDF lands at the edition's root (PDF_NAME in _ext/attn_print.py), and the introduction then
links it (so a site built without the PDF links none). Chromium is Debian's (/usr/bin/chromium), driven by Playwright, offline: no host but
the local server resolves. Each PDF is then read back (check: every chapter in the outline, page
numbers, links, text), and a wrong one fails the command; make test prints a short book of each
edition (build_one's only=) the same way.
"""

from __future__ import annotations

import functools
import http.server
import json
import pathlib
import posixpath
import re
import shutil
import subprocess
import sys
import threading
import time
import unicodedata
import urllib.parse
from html import escape

import yaml
from bs4 import BeautifulSoup

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "_ext"))
from attn_print import PDF_NAME, pdf_link  # noqa: E402 (the extension's folder is not a package)

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
                 "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"]
# edition -> (its sources, for _toc.yml and _config.yml; its folder in the site; its language tag)
EDITIONS = {"en": (ROOT, "", "en"), "zh": (ROOT / "zh", "zh", "zh-CN")}
WORDS = {
    "en": {"contents": "Contents", "edition": "English edition", "live": "Interactive explorer: it runs on the "
           "book's site, at", "printed": "Printed from the site built on", "site": "The book online:"},
    "zh": {"contents": "目录", "edition": "中文版", "live": "交互式探索器：请在本书网站上使用，地址：",
           "printed": "由网站生成，日期：", "site": "在线阅读："},
}
FOOTER = ('<div style="width:100%;font-size:8px;color:#555;text-align:center;font-family:sans-serif">'
          '<span class="pageNumber"></span> / <span class="totalPages"></span></div>')
# Only in the assembled document: each part and chapter starts a page; the title page is centred.
BOOK_CSS = """
.attn-pdf-part, .attn-pdf-chapter, .attn-pdf-contents { break-before: page; }
.attn-pdf-title { text-align: center; padding-top: 30vh; }
.attn-pdf-title h1 { font-size: 28pt; margin-bottom: 1em; }
.attn-pdf-part > h1 { font-size: 22pt; margin-top: 35vh; text-align: center; }
.attn-pdf-contents ol { list-style: none; padding-left: 0; }
.attn-pdf-contents ol ol { padding-left: 1.5em; }
.attn-pdf-contents li { margin: .2em 0; }
.attn-pdf-live { border: 1px solid #999; padding: .5em .8em; font-style: italic; }
"""
CJK_PRINT_FONT = "Noto Sans CJK SC"  # the Simplified forms (radical_ideographs reads this face first)
BOOK_CSS += f'html:lang(zh) body {{ font-family: "{CJK_PRINT_FONT}", "Noto Sans", sans-serif; }}\n'
ID_REFS = ("aria-labelledby", "aria-describedby", "aria-controls", "aria-owns", "for", "headers")


class PdfError(RuntimeError):
    pass


def book_order(src: pathlib.Path, only: tuple[str, ...] | None = None) -> list[tuple[str | None, list[str]]]:
    """(part caption or None, [page names]) in the order of the edition's _toc.yml; with ``only``, only
    those pages (and the parts that hold one)."""
    toc = yaml.safe_load((src / "_toc.yml").read_text(encoding="utf-8"))
    order: list[tuple[str | None, list[str]]] = [(None, [toc["root"]])]
    for part in toc.get("parts", []):
        order.append((part.get("caption"), [p for c in part.get("chapters", []) for p in _with_sections(c)]))
    if only is not None:
        unknown = set(only) - {p for _, names in order for p in names}
        if unknown:
            raise PdfError(f"only={sorted(unknown)}: not pages of {src / '_toc.yml'}")
        order = [(caption, kept) for caption, names in order for kept in [[p for p in names if p in only]] if kept]
    return order


def _with_sections(entry: dict) -> list[str]:
    """A _toc.yml entry's page and, after it, its sections' (the API reference's pages), in order."""
    return [entry["file"], *(p for s in entry.get("sections", []) for p in _with_sections(s))]


def site_url(place: str) -> str:
    """Where the edition is published: GitHub Pages of the repository in _config.yml."""
    config = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
    owner, repo = urllib.parse.urlsplit(config["repository"]["url"]).path.strip("/").split("/")[:2]
    return f"https://{owner}.github.io/{repo}/" + (place + "/" if place else "")


def slug(page: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]", "-", page)


class Chapter:
    """One built page, its article made ready to sit inside the book's document."""

    def __init__(self, edition_dir: pathlib.Path, page: str, pages: set[str], base_url: str, lang: str):
        path = edition_dir / f"{page}.html"
        if not path.exists():
            raise PdfError(f"{path} is missing: build the site first (make book)")
        self.page, self.slug = page, slug(page)
        text = path.read_text(encoding="utf-8")
        # Only the head's styles and the article are wanted: parsing those alone (not the navigation, the
        # widgets' saved state) takes a fraction of the time.
        start, end = text.find('<article class="bd-article"'), text.find("</article>")
        head_end = text.find("</head>")
        self.head = BeautifulSoup(text[: head_end + 7] if head_end >= 0 else "", "html.parser")
        self.soup = BeautifulSoup(text[start : end + 10] if 0 <= start < end else "", "html.parser")
        article = self.soup.select_one("article.bd-article")
        if article is None:
            raise PdfError(f"{path} has no <article class='bd-article'>: is it a page of the book?")
        self.article = article
        heading = article.find("h1")
        self.title = heading.get_text(" ", strip=True).rstrip("#").strip() if heading else page
        self._clean(lang, base_url)
        self._relink(pages, base_url)

    def _clean(self, lang: str, base_url: str) -> None:
        a = self.article
        for junk in a.select(".headerlink, .attn-lang, .attn-pdf, script:not([type])"):
            junk.decompose()
        for d in a.select("details.attn-deeper, details.sd-dropdown"):
            d["open"] = ""  # prose: open on paper (a hidden code cell stays folded)
        for img in a.find_all("img"):
            img.attrs.pop("loading", None)  # every figure is printed, none waits to be scrolled to
        for view in a.select('script[type="application/vnd.jupyter.widget-view+json"]'):
            note = self.soup.new_tag("p", attrs={"class": "attn-pdf-live"})
            url = base_url + self.page + ".html"
            note.append(WORDS[lang]["live"] + " ")
            link = self.soup.new_tag("a", href=url, attrs={"class": "attn-url-shown"})
            link.string = url
            note.append(link)
            view.replace_with(note)
        for level in range(6, 0, -1):  # chapters sit under their part's heading
            for h in a.find_all(f"h{level}"):
                h.name = f"h{min(level + 1, 6)}"

    def _relink(self, pages: set[str], base_url: str) -> None:
        prefix = self.slug + "--"
        for tag in self.article.find_all(True):
            if tag.get("id"):
                tag["id"] = prefix + tag["id"]
            for key in ID_REFS:
                if tag.get(key):
                    value = tag[key]
                    value = value if isinstance(value, list) else value.split()
                    tag[key] = " ".join(prefix + v for v in value)
            if tag.name == "a" and tag.get("href"):
                tag["href"] = self._href(tag["href"], pages, base_url)
            for key in ("src", "poster"):
                if tag.get(key):
                    tag[key] = self._resource(tag[key])
            if tag.get("srcset"):
                tag["srcset"] = ", ".join(
                    " ".join([self._resource(part.split()[0]), *part.split()[1:]])
                    for part in tag["srcset"].split(",") if part.strip())

    def _resource(self, url: str) -> str:
        """A file the page loads, relative to the edition's root (where the document is served)."""
        if re.match(r"^[a-z][a-z0-9+.-]*:", url, re.I) or url.startswith(("/", "#")):
            return url
        return posixpath.normpath(posixpath.join(posixpath.dirname(self.page), url))

    def _href(self, href: str, pages: set[str], base_url: str) -> str:
        if re.match(r"^[a-z][a-z0-9+.-]*:", href, re.I):
            return href
        path, _, fragment = href.partition("#")
        if not path:
            return f"#{self.slug}--{fragment}" if fragment else f"#{self.slug}"
        target = posixpath.normpath(posixpath.join(posixpath.dirname(self.page), path))
        name = target[:-5] if target.endswith(".html") else target
        if name in pages:
            return f"#{slug(name)}--{fragment}" if fragment else f"#{slug(name)}"
        return urllib.parse.urljoin(base_url, target) + (f"#{fragment}" if fragment else "")


def assemble(edition_dir: pathlib.Path, src: pathlib.Path, place: str, lang_tag: str,
             only: tuple[str, ...] | None = None) -> tuple[str, list[tuple[str, str]]]:
    """The edition's book as one HTML document (served from the edition's root); and its chapters, each as
    (page name, title).
    With ``only`` (page names), a short book of those pages, in the book's order (its other pages are then
    out of the book: links to them go to the published site)."""
    lang = "zh" if lang_tag.startswith("zh") else "en"
    config = yaml.safe_load((src / "_config.yml").read_text(encoding="utf-8"))
    order = book_order(src, only)
    pages = {p for _, names in order for p in names}
    base_url = site_url(place)
    chapters = {p: Chapter(edition_dir, p, pages, base_url, lang) for p in pages}

    head: list[str] = []
    seen: set[str] = set()
    for ch in chapters.values():  # every page's style sheets and styles (the maths' may differ per page)
        for el in ch.head.find_all(["link", "style", "script"]):
            if el.name == "link" and "stylesheet" not in (el.get("rel") or []):
                continue
            if el.name == "script" and "mathjax" not in (el.get("src", "") + el.get_text()).lower():
                continue  # the site's scripts drive its navigation; only MathJax (when it runs in the page) is needed
            if el.get("href"):
                el["href"] = ch._resource(el["href"])
            if el.get("src"):
                el["src"] = ch._resource(el["src"])
            if el.name == "link" and el.get("media") == "print":
                el["media"] = "all"
            key = str(el)
            if key not in seen:
                seen.add(key)
                head.append(key)

    words = WORDS[lang]
    contents = [f'<section class="attn-pdf-contents" id="attn-pdf-contents"><h2>{words["contents"]}</h2><ol>']
    body = []
    for caption, names in order:
        items = "".join(f'<li><a href="#{chapters[n].slug}">{escape(chapters[n].title)}</a></li>' for n in names)
        if caption:
            part_id = "part-" + slug(caption)
            contents.append(f'<li><a href="#{part_id}">{escape(caption)}</a><ol>{items}</ol></li>')
            body.append(f'<section class="attn-pdf-part" id="{part_id}"><h1>{escape(caption)}</h1></section>')
        else:
            contents.append(items)
        for n in names:
            ch = chapters[n]
            inner = "".join(str(c) for c in ch.article.contents)
            body.append(f'<section class="attn-pdf-chapter" id="{ch.slug}">{inner}</section>')
    contents.append("</ol></section>")
    title, author = escape(config.get("title", "")), escape(config.get("author", ""))
    today = time.strftime("%Y-%m-%d")
    title_page = (f'<section class="attn-pdf-title"><h1>{title}</h1><p>{author}</p>'
                  f'<p>{words["edition"]}</p><p>{words["site"]} <a class="attn-url-shown" href="{base_url}">{base_url}</a></p>'
                  f'<p>{words["printed"]} {today}</p></section>')
    doc = (f'<!DOCTYPE html><html lang="{lang_tag}" data-theme="light" data-mode="light"><head><meta charset="utf-8">'
           f"<title>{title}</title>{''.join(head)}<style>{BOOK_CSS}</style></head>"
           f'<body><div class="bd-article-container"><article class="bd-article" role="main">'
           f"{title_page}{''.join(contents)}{''.join(body)}</article></div></body></html>")
    return doc, [(n, chapters[n].title) for _, names in order for n in names]


def serve(directory: pathlib.Path, extra: dict[str, bytes]):
    """A local server for the built site, with the assembled documents at ``extra``'s paths."""

    class Handler(http.server.SimpleHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 (http.server's name)
            path = urllib.parse.urlsplit(self.path).path
            if path in extra:
                data = extra[path]
                self.send_response(200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
                return
            super().do_GET()

        def log_message(self, *args):  # quiet
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Handler, directory=str(directory)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def print_pdf(browser, url: str, out: pathlib.Path, title: str) -> dict[str, float]:
    """Print the document at ``url`` to ``out``; return the seconds spent loading it (with MathJax) and printing."""
    start = time.perf_counter()
    page = browser.new_page()
    page.set_default_timeout(600_000)
    problems: list[str] = []
    page.on("requestfailed", lambda r: problems.append(f"{r.url}: {r.failure}"))
    page.goto(url, wait_until="load", timeout=300_000)
    # MathJax in the page (where the site still typesets in the browser), the web fonts, every image
    page.evaluate("""async () => {
        if (window.MathJax && MathJax.startup && MathJax.startup.promise) await MathJax.startup.promise;
        await document.fonts.ready;
        await Promise.all([...document.images].map(i => i.complete ? 0 : new Promise(r => { i.onload = i.onerror = r; })));
    }""")
    broken = page.evaluate("() => [...document.images].filter(i => !i.naturalWidth).map(i => i.src)")
    if broken or problems:
        raise PdfError(f"{out.name}: not loaded: {(broken + problems)[:10]}")
    loaded = time.perf_counter()
    header = ('<div style="width:100%;font-size:8px;color:#777;text-align:right;padding-right:16mm;font-family:sans-serif">'
              f"{escape(title)}</div>")
    page.pdf(path=str(out), format="A4", print_background=True, outline=True, tagged=True,
             display_header_footer=True, header_template=header, footer_template=FOOTER,
             margin={"top": "18mm", "bottom": "20mm", "left": "16mm", "right": "16mm"})
    page.close()
    return {"load_s": round(loaded - start, 1), "print_s": round(time.perf_counter() - loaded, 1)}


# Kangxi Radicals and CJK Radicals Supplement. A CJK font draws a radical and its ideograph with one glyph (the
# Noto CJK fonts draw U+2F12 KANGXI RADICAL POWER and U+529B 力 alike, U+2ED3 CJK RADICAL C-SIMPLIFIED LONG and
# U+957F 长), and Chromium names such a glyph in the PDF's text map (ToUnicode) by the lower code point, the
# radical: read by pypdf or pdf.js (Firefox's viewer), the Chinese PDF's text said 注意⼒ where the page shows
# 注意力 (pdf.js: 注意力 0 times in pages 20-60, 148 times once mapped; poppler's pdftotext read it right either way).
RADICALS = (0x2E80, 0x2FDF)
UNIFIED = ((0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x3134F))  # CJK Unified Ideographs, extensions A to G


@functools.cache
def radical_ideographs() -> dict[int, str]:
    """The ideograph each radical stands for, from the CJK fonts that print the book (fontconfig's fonts for
    Chinese, CJK_PRINT_FONT's face first: the Japanese face draws U+2F3E with 戸, the Simplified one with 户): the
    unified ideograph the face draws with the radical's glyph (the lowest, where several share it). Kangxi
    radicals the fonts leave out are read by their compatibility form (NFKC) instead (_radical_free)."""
    from fontTools.ttLib import TTCollection, TTFont

    def faces(command: list[str]) -> list[tuple[str, int]]:
        listing = subprocess.run(command, capture_output=True, text=True, check=True).stdout
        return [(line.rsplit(":", 1)[0], int(line.rsplit(":", 1)[1])) for line in listing.split("\n") if ":" in line]

    try:
        found = faces(["fc-match", "-f", "%{file}:%{index}\n", CJK_PRINT_FONT])
        found += sorted(set(faces(["fc-list", "-f", "%{file}:%{index}\n", ":lang=zh"])) - set(found))
    except (OSError, subprocess.CalledProcessError, ValueError):
        return {}
    table: dict[int, str] = {}
    for file, index in found:
        collection = file.lower().endswith((".ttc", ".otc"))
        face = TTCollection(file, lazy=True).fonts[index] if collection else TTFont(file, lazy=True)
        cmap = face.getBestCmap() or {}
        ideograph: dict[str, int] = {}
        for code in sorted(cmap):
            if any(lo <= code <= hi for lo, hi in UNIFIED):
                ideograph.setdefault(cmap[code], code)
        for code, glyph in cmap.items():
            if RADICALS[0] <= code <= RADICALS[1] and code not in table and glyph in ideograph:
                table[code] = chr(ideograph[glyph])
    return table


def cmap_mapping(text: str) -> dict[str, str]:
    """What a ToUnicode CMap maps each character code to (the code in hex as written, upper case -> the text),
    from its bfchar and bfrange entries (a range with a first value, or with a list)."""
    codes: dict[str, str] = {}
    for block in re.findall(r"beginbfchar(.*?)endbfchar", text, re.S):
        for src, dst in re.findall(r"<([0-9A-Fa-f]+)>\s*<([0-9A-Fa-f]+)>", block):
            codes[src.upper()] = dst
    for block in re.findall(r"beginbfrange(.*?)endbfrange", text, re.S):
        for lo, hi, dst in re.findall(r"<([0-9A-Fa-f]+)>\s*<([0-9A-Fa-f]+)>\s*(\[[^\]]*\]|<[0-9A-Fa-f]+>)", block):
            count = int(hi, 16) - int(lo, 16) + 1
            dsts = (re.findall(r"<([0-9A-Fa-f]+)>", dst) if dst.startswith("[")
                    else [f"{int(dst[1:-1], 16) + i:0{len(dst) - 2}X}" for i in range(count)])
            for i, d in enumerate(dsts):
                codes[f"{int(lo, 16) + i:0{len(lo)}X}"] = d
    return {src: bytes.fromhex(dst).decode("utf-16-be", errors="surrogatepass") for src, dst in codes.items()}


def text_maps(pages):
    """The ToUnicode stream of each font the ``pages`` (pypdf's) draw with, once each."""
    for ref in _text_map_refs(pages):
        yield ref.get_object()


def _text_map_refs(pages):
    """The references to those streams (each is an object of its own, as a stream must be)."""
    seen = set()
    for page in pages:
        for ref in (page.get("/Resources") or {}).get("/Font", {}).values():
            if ref.idnum in seen:
                continue
            seen.add(ref.idnum)
            font = ref.get_object()
            if "/ToUnicode" in font:
                yield font.raw_get("/ToUnicode")


def _radical_free(cmap: bytes, ideographs: dict[int, str]) -> bytes | None:
    """A ToUnicode CMap with each radical a glyph is mapped to replaced by the ideograph it stands for (in
    ``ideographs``, else its compatibility form, NFKC); None when it maps none. The mappings are written out
    again, as bfchar entries."""
    text = cmap.decode("latin-1")
    mapping = cmap_mapping(text)
    fixed = {src: "".join(ideographs.get(ord(c)) or unicodedata.normalize("NFKC", c)
                          if RADICALS[0] <= ord(c) <= RADICALS[1] else c for c in chars)
             for src, chars in mapping.items()}
    if fixed == mapping:
        return None
    if "endcodespacerange" not in text or "endcmap" not in text:
        raise PdfError(f"a ToUnicode CMap that maps a radical but is not laid out as Chromium writes them: {text[:300]!r}")
    items = sorted((src, chars.encode("utf-16-be", errors="surrogatepass").hex().upper()) for src, chars in fixed.items())
    body = "".join(f"\n{len(chunk)} beginbfchar\n" + "".join(f"<{s}> <{d}>\n" for s, d in chunk) + "endbfchar"
                   for chunk in (items[i : i + 100] for i in range(0, len(items), 100)))
    head = text[: text.index("endcodespacerange") + len("endcodespacerange")]
    return (head + body + "\n" + text[text.index("endcmap") :]).encode("latin-1")


def unify_radicals(path: pathlib.Path) -> int:
    """Map the glyphs of ``path`` that its text map names as radicals (RADICALS) to their ideographs instead, in
    an incremental update of the PDF (the rest of the file, outline and links included, is kept as printed).
    Returns how many fonts' maps changed."""
    from pypdf import PdfReader

    reader = PdfReader(path)
    ideographs = radical_ideographs()
    changed = {}
    for ref in _text_map_refs(reader.pages):
        cmap = _radical_free(ref.get_object().get_data(), ideographs)
        if cmap is not None:
            changed[ref.idnum, ref.generation] = cmap
    if changed:
        append_update(path, reader.trailer, changed)
    return len(changed)


def append_update(path: pathlib.Path, trailer, streams: dict[tuple[int, int], bytes]) -> None:
    """Append to the PDF at ``path`` an incremental update (ISO 32000-1, 7.5.6) that replaces each stream object
    named in ``streams`` (its number and generation) by the data given for it, compressed; ``trailer``: the
    file's last trailer (pypdf's), whose Root, Info and ID the new one repeats. Written by hand, not by pypdf's
    incremental writer, which hashes every object of the file when it opens it (9 of the 13-15 s this step
    took per edition)."""
    import io
    import zlib

    from pypdf.generic import DictionaryObject, NameObject, NumberObject

    with path.open("rb") as f:
        size = f.seek(0, io.SEEK_END)
        f.seek(max(0, size - 1024))
        found = re.search(rb"startxref\s+(\d+)\s+%%EOF\s*$", f.read())
    if found is None:
        raise PdfError(f"{path}: no startxref at its end, not a PDF that can be updated")
    out = io.BytesIO(b"\n")
    out.seek(0, io.SEEK_END)
    offsets = {}
    for (num, gen), body in sorted(streams.items()):
        packed = zlib.compress(body, 9)
        offsets[num, gen] = size + out.tell()
        out.write(b"%d %d obj\n<< /Length %d /Filter /FlateDecode >>\nstream\n%b\nendstream\nendobj\n" % (num, gen, len(packed), packed))
    xref = size + out.tell()
    # one subsection per object, after object 0's (the head of the free list, as in the file's first table:
    # readers take a table that starts elsewhere as numbered wrongly); each entry exactly 20 bytes
    out.write(b"xref\n0 1\n0000000000 65535 f \n"
              + b"".join(b"%d 1\n%010d %05d n \n" % (num, offsets[num, gen], gen) for num, gen in sorted(offsets)))
    new = DictionaryObject({NameObject(key): trailer.raw_get(key) for key in ("/Size", "/Root", "/Info", "/ID") if key in trailer})
    new[NameObject("/Prev")] = NumberObject(int(found.group(1)))
    out.write(b"trailer\n")
    new.write_to_stream(out)
    out.write(b"\nstartxref\n%d\n%%%%EOF\n" % xref)
    tmp = path.with_suffix(".pdf.tmp")
    shutil.copyfile(path, tmp)
    with tmp.open("ab") as f:
        f.write(out.getvalue())
    tmp.replace(path)


# A heading and the words of a formula each edition's book must hold as text (so searchable, and copied as
# written): the self-attention chapter's title and its scaled dot-product.
KNOWN_TEXT = {"en": ("Self-attention", "softmax"), "zh": ("自注意力", "softmax")}
KNOWN_PAGE = "book/self_attention"


def outline(reader, items=None, depth=0) -> list[tuple[int, str, int]]:
    """(depth, title, page index) of every bookmark of a PDF (pypdf's reader)."""
    out = []
    for item in reader.outline if items is None else items:
        if isinstance(item, list):
            out += outline(reader, item, depth + 1)
        else:
            out.append((depth, " ".join(item.title.split()), reader.get_destination_page_number(item)))
    return out


def radicals_in_text_maps(reader) -> dict[str, int]:
    """The radicals (RADICALS) the fonts' text maps name, with how many glyphs map to each."""
    found: dict[str, int] = {}
    for stream in text_maps(reader.pages):
        for chars in cmap_mapping(stream.get_data().decode("latin-1")).values():
            for c in chars:
                if RADICALS[0] <= ord(c) <= RADICALS[1]:
                    found[c] = found.get(c, 0) + 1
    return found


def check(path: pathlib.Path, lang: str, chapters: list[tuple[str, str]], offered: pathlib.Path | None = None) -> dict:
    """What a printed book must be, read back from the PDF: every chapter of ``chapters`` ((page name, title),
    as ``assemble`` gives them) in the outline, in order, each bookmark on a page holding its title; a few
    pages a chapter and a bounded size; "k / n" in the footers; each link into the book lands on a page of it and none on the server that printed it; the
    self-attention chapter's title and formula as text where it is in the book; no glyph named as a CJK radical.
    With ``offered`` (the edition's introduction), that page links the PDF. Returns {pages, links};
    raises PdfError with every problem found."""
    from pypdf import PdfReader

    reader = PdfReader(path)
    titles = [title for _, title in chapters]
    n, size = len(reader.pages), path.stat().st_size
    problems = []
    if not 5 * len(titles) <= n <= 1500:
        problems.append(f"{n} pages for {len(titles)} chapters: expected 5 to 1,500 and at least 5 a chapter")
    if size > 60e6:
        problems.append(f"{size / 1e6:.1f} MB: over 60 MB")
    # chapters compared without spaces: Chromium drops the space where a long heading wraps
    entries: dict[str, int] = {}
    for depth, title, page in outline(reader):
        if depth == 1:  # one level below the parts
            entries.setdefault(re.sub(r"\s+", "", title), page)
    wanted = [re.sub(r"\s+", "", t) for t in titles]
    missing = [t for t in wanted if t not in entries]
    if missing:
        problems.append(f"chapters missing from the outline: {missing}")
    pages = [entries[t] for t in wanted if t in entries]
    if pages != sorted(pages) or len(set(pages)) != len(pages):
        problems.append(f"the outline's chapters are not in the book's order, one a page: {pages}")
    for title in {wanted[0], wanted[-1]} - set(missing):
        text = re.sub(r"\s+", "", reader.pages[entries[title]].extract_text())
        if title[-6:] not in text:
            problems.append(f"the bookmark of {title!r} lands on a page without it: {text[:200]!r}")
    for k in sorted({2, n // 2, n}) if n >= 2 else []:
        text = reader.pages[k - 1].extract_text()
        if not re.search(rf"(?<!\d){k}\s*/\s*{n}(?!\d)", text):
            problems.append(f"page {k}: no '{k} / {n}' in its footer: {text[-200:]!r}")
    internal, local = 0, []
    named = reader.named_destinations
    for page in reader.pages:
        for annot in page.get("/Annots") or []:
            a = annot.get_object()
            if a.get("/Subtype") != "/Link":
                continue
            action = a.get("/A")
            action = None if action is None else action.get_object()
            if action is not None and action.get("/S") == "/URI":
                uri = str(action["/URI"])
                if re.match(r"https?://(127\.0\.0\.1|localhost)", uri) or not uri.startswith(("https://", "http://", "mailto:")):
                    local.append(uri)
                continue
            dest = a.get("/Dest") if action is None else action.get("/D")
            if dest is None:
                problems.append(f"a link with no destination: {a}")
            elif isinstance(dest, (str, bytes)) or not hasattr(dest, "__len__"):
                if str(dest) not in named:
                    problems.append(f"a link to an unknown destination {dest!r}")
                else:
                    internal += 1
            elif 0 <= reader.get_page_number(dest[0].get_object()) < n:
                internal += 1
    if internal < 3 * len(titles):  # the contents alone links every chapter
        problems.append(f"{internal} links inside the book for {len(titles)} chapters: fewer than 3 a chapter")
    if local:
        problems.append(f"links to the server that printed the book, or to no host: {local[:10]}")
    first = {name: entries.get(t) for (name, _), t in zip(chapters, wanted, strict=True)}.get(KNOWN_PAGE)
    if first is not None:
        text = " ".join(" ".join(p.extract_text() for p in reader.pages[first:first + 12]).split())
        problems += [f"{words!r} is not in the text of the self-attention chapter's first pages"
                     for words in KNOWN_TEXT[lang] if words not in text]
    radicals = radicals_in_text_maps(reader)
    if radicals:
        problems.append(f"glyphs named as CJK radicals, not as their ideographs: {radicals}")
    if offered is not None:
        intro = offered.read_text(encoding="utf-8")
        if not re.search(rf'class="attn-pdf"><a href="(\.\./)*{re.escape(PDF_NAME[lang])}"', intro):
            problems.append(f"{offered.name} does not offer {PDF_NAME[lang]}")
    if problems:
        raise PdfError(f"{path}: " + "; ".join(problems))
    return {"pages": n, "links": internal}


def build(site: pathlib.Path = ROOT, editions: tuple[str, ...] = ("en", "zh"), only: tuple[str, ...] | None = None,
          out_dir: pathlib.Path | None = None) -> list[dict]:
    """Write each edition's PDF into ``site/_build/html``; return what was written (path, pages, bytes,
    seconds). Two editions are printed at once, each in its own process (and Chromium renderer): the
    work is on the CPU, assembling and laying out a few hundred pages. With ``only`` (page names), each
    edition's short book of those pages, written into ``out_dir`` (build_one)."""
    html = site / "_build" / "html"
    if not (html / "index.html").exists():
        raise PdfError(f"no built site in {html}: run make book (or python -m scripts.site {site}) first")
    if not pathlib.Path(CHROMIUM).exists():
        raise PdfError(f"{CHROMIUM} is missing: apt-get update && apt-get install -y chromium")
    outs = {lang: None if only is None else pathlib.Path(out_dir) / PDF_NAME[lang] for lang in editions}
    if len(editions) == 1:
        return [build_one(html, editions[0], only, outs[editions[0]])]
    short = [a for page in only or () for a in ("--only", page)] + (["--out-dir", str(out_dir)] if only else [])
    procs = [subprocess.Popen([sys.executable, "-m", "scripts.pdf", str(site), "--edition", lang, "--json", *short],
                              cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for lang in editions]
    results, errors = [], []
    for lang, proc in zip(editions, procs, strict=True):
        out, err = proc.communicate(timeout=1800)
        if proc.returncode:
            errors.append(f"{lang}: {err.strip()[-3000:]}")
        else:
            r = json.loads(out.strip().splitlines()[-1])
            results.append(r | {"path": pathlib.Path(r["path"])})
    if errors:
        raise PdfError("\n".join(errors))
    return results


def offer(root: pathlib.Path, src: pathlib.Path, lang: str) -> None:
    """Link the PDF from the edition's introduction (its root page), under its title: only now that the
    PDF exists, so that a site built without it links none."""
    page = book_order(src)[0][1][0]
    path = root / f"{page}.html"
    text = path.read_text(encoding="utf-8")
    if 'class="attn-pdf"' in text:
        return
    start = text.find('<article class="bd-article"')
    end = text.find("</h1>", start)
    if start < 0 or end < 0:
        raise PdfError(f"{path}: no <article> with a <h1> to put the PDF's link under")
    link = pdf_link(lang, posixpath.relpath(PDF_NAME[lang], posixpath.dirname(page)))
    tmp = path.with_suffix(".html.tmp")  # replaced whole: a test reading the site meanwhile sees one or the other
    tmp.write_text(text[: end + 5] + "\n" + link + text[end + 5 :], encoding="utf-8")
    tmp.replace(path)


def build_one(html: pathlib.Path, lang: str, only: tuple[str, ...] | None = None,
              out: pathlib.Path | None = None) -> dict:
    """Print the edition's book (with ``only``, a short book of those pages, written to ``out``, and not
    offered by the site) and check it (``check``: a PdfError says what is wrong)."""
    from playwright.sync_api import sync_playwright

    src, place, tag = EDITIONS[lang]
    root = html / place if place else html
    start = time.perf_counter()
    doc, chapters = assemble(root, src, place, tag, only)
    assembled = time.perf_counter()
    if only is not None and out is None:
        raise PdfError("a short book (only=...) is written to a path of its own (out=...), not as the site's PDF")
    out = out or root / PDF_NAME[lang]
    url_path = f"/{place + '/' if place else ''}_attn_book_{lang}.html"
    server = serve(html, {url_path: doc.encode("utf-8")})
    title = yaml.safe_load((src / "_config.yml").read_text(encoding="utf-8")).get("title", "")
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            spent = print_pdf(browser, f"http://127.0.0.1:{server.server_port}{url_path}", out, title)
            browser.close()
    finally:
        server.shutdown()
    printed = time.perf_counter()
    unified = unify_radicals(out)
    unified_s = time.perf_counter() - printed
    if only is None:
        offer(root, src, lang)
    checked = check(out, lang, chapters, offered=root / f"{book_order(src)[0][1][0]}.html" if only is None else None)
    return {"edition": lang, "path": out, "pages": checked["pages"], "links": checked["links"], "bytes": out.stat().st_size,
            "seconds": round(time.perf_counter() - start, 1), "assemble_s": round(assembled - start, 1), **spent,
            "radical_fonts": unified, "radicals_s": round(unified_s, 1)}


def main(argv: list[str]) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m scripts.pdf", description=__doc__.split("\n")[0])
    parser.add_argument("site", nargs="?", default=str(ROOT), help="the folder holding _build/html (default: the repository)")
    parser.add_argument("--edition", action="append", choices=sorted(EDITIONS), help="only this edition (repeatable)")
    parser.add_argument("--json", action="store_true", help="print each result as one line of JSON")
    parser.add_argument("--only", action="append", metavar="PAGE", help="a short book of these pages (repeatable; "
                        "e.g. book/intro), written into --out-dir")
    parser.add_argument("--out-dir", help="where a short book is written (not into the site, which offers the whole book)")
    args = parser.parse_args(argv)
    if bool(args.only) != bool(args.out_dir):
        parser.error("--only and --out-dir go together")
    try:
        results = build(pathlib.Path(args.site).resolve(), tuple(args.edition or EDITIONS),
                        tuple(args.only) if args.only else None, args.out_dir and pathlib.Path(args.out_dir).resolve())
    except PdfError as e:
        print(e, file=sys.stderr)
        return 1
    for r in results:
        if args.json:
            print(json.dumps(r | {"path": str(r["path"])}))
        else:
            print(f"{r['edition']}: {r['path']}  {r['pages']} pages, {r['bytes'] / 1e6:.1f} MB, {r['seconds']} s "
                  f"(assembled in {r['assemble_s']} s, loaded in {r['load_s']} s, printed in {r['print_s']} s; "
                  f"radicals named as ideographs in {r['radical_fonts']} fonts' text maps in {r['radicals_s']} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
