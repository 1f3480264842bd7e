"""The Chinese edition (中文版): generated from the English chapters and an overlay of translations.

    python -m scripts.zh skeleton [CHAPTER ...]  # give each overlay the units it lacks (English text to replace)
    python -m scripts.zh build                   # write zh/ from book/ and i18n/zh/ (never executes a cell)
    python -m scripts.zh check                   # what the tests check: stale, missing, untranslated units
    python -m scripts.zh stale                   # the units whose English changed after they were translated
    python -m scripts.zh diff CHAPTER UNIT       # how the English of one unit changed since its translation
    python -m scripts.zh figures [CHAPTER ...]   # draw the chapters' figures in Chinese (scripts/zh_figures.py)
    python -m scripts.zh docstrings              # add the API reference's untranslated docstrings (scripts/zh_docstrings.py)

The translations live in ``i18n/zh/``:

- ``<chapter>.md``, one per chapter notebook: a *unit* per markdown cell, figure caption and alt text,
  and per code cell with a comment, each under a marker ``<!-- cell|caption|alt|code CELL-ID en:HASH -->``
  that names the English cell and holds a hash of the English text it translates. When the English changes, the hash no longer
  matches and the unit is *stale* (``stale`` lists them, ``diff`` shows the English change).
- ``pages/<page>.md``: the Chinese text of the Markdown pages (every ``.md`` file of _toc.yml: intro,
  glossary, the API reference and its pages under ``api/``, references; ``markdown_pages``), whose
  first line ``<!-- page NAME en:HASH -->`` does the same for the English page.
- ``docstrings/<module>.md``: the docstrings the API reference shows, a unit per documented object
  (``<!-- doc NAME en:HASH -->``), applied by ``_ext/attn_docstrings.py`` (scripts/zh_docstrings.py).
- ``strings.yml``: the book's title, the table of contents' part captions, the footer, the
  language switch, and the theme's words (``theme``: tooltips, accessible names, placeholders, the 404
  page), which ``build`` writes as message catalogues in ``zh/locale/`` (``catalogues``) and the
  configuration (``config``) for _ext/attn_theme_words.py.

A ``code`` unit is the cell's whole source in a ```` ```python ```` fence, the English code with its
comments in Chinese: ``check`` tokenizes both and wants every token but the comments identical, in
the same place (``code_difference``), so a number, a string or a line cannot drift; until a code unit
passes, the Chinese book keeps the English cell.

``build`` writes ``zh/``, the Chinese book: each chapter notebook is the English one with its
markdown cells, captions and alt text replaced, code cells and stored outputs copied as they are
(every number identical, glued values substituted from the same outputs; the code the same
but for its comments; the words of the package's tables and reports in Chinese, through the string
table the package itself uses, attn/_locale/zh.py: ``chinese_output``); ``zh/_config.yml`` and
``zh/_toc.yml`` derived from the English ones; and the reader editions (``zh/reader/book/``) that
Colab, Binder and the download button of a Chinese page open. ``make book`` builds ``zh/`` into
``_build/html/zh/``. Everything in ``zh/`` is generated: edit the overlays, then run ``build``.
"""

from __future__ import annotations

import copy
import hashlib
import io
import json
import pathlib
import re
import subprocess
import sys
import tokenize

import yaml

from scripts import zh_docstrings, zh_figures

ROOT = pathlib.Path(__file__).resolve().parents[1]
I18N = ROOT / "i18n" / "zh"
ZH = ROOT / "zh"
KINDS = ("cell", "caption", "alt", "code")
MARKER = re.compile(r"^<!-- (cell|caption|alt|code|page) ([A-Za-z0-9_./-]+) en:([0-9a-f]{12}) -->[ \t]*$", re.M)


def markdown_pages() -> tuple[str, ...]:
    """The book's Markdown pages, in the order of _toc.yml, named from book/ ("intro", "api",
    "api/maths", ...): each has its Chinese text in i18n/zh/pages/<name>.md."""
    from scripts.notebooks import toc_files

    return tuple(f.removeprefix("book/") for f in toc_files() if (ROOT / f"{f}.md").exists())


PAGES = markdown_pages()
CJK = re.compile(r"[\u4e00-\u9fff]")
HEADER = ("<!-- The Chinese text of book/{name}.ipynb, one unit per markdown cell, caption and alt text, and\n"
          "     per code cell with comments (its source in a python fence: translate the comments only).\n"
          "     Translate the text under each marker and keep the marker: its hash names the English text\n"
          "     translated. python -m scripts.zh stale lists units whose English changed. -->\n")
FENCE = re.compile(r"\A(`{3,})python[ \t]*\n(.*?)\n?\1[ \t]*\Z", re.S)


def text_hash(text: str) -> str:
    """The hash that ties a translation to the English text it translates (whitespace at the ends ignored)."""
    return hashlib.sha256(text.strip().encode("utf-8")).hexdigest()[:12]


def chapters() -> list[pathlib.Path]:
    from scripts.notebooks import chapters as toc_chapters

    return toc_chapters()


def _source(cell) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else src


def comments(source: str) -> list[tuple[int, str]]:
    """(line, text) of each comment of a Python source (none if it does not tokenize: a cell magic)."""
    try:
        return [(t.start[0], t.string) for t in _tokens(source) if t.type == tokenize.COMMENT]
    except (tokenize.TokenError, SyntaxError):
        return []


def _tokens(source: str) -> list[tokenize.TokenInfo]:
    return list(tokenize.generate_tokens(io.StringIO(source).readline))


def english_units(nb: dict) -> list[tuple[str, str, str]]:
    """(kind, cell id, English text) of every unit a chapter's translation has, in the notebook's order."""
    units = []
    for cell in nb["cells"]:
        if cell["cell_type"] == "markdown":
            units.append(("cell", cell["id"], _source(cell)))
        if cell["cell_type"] == "code" and comments(_source(cell)):
            units.append(("code", cell["id"], _source(cell)))
        mystnb = cell.get("metadata", {}).get("mystnb", {})
        if cell["cell_type"] == "code" and mystnb.get("figure", {}).get("caption"):
            units.append(("caption", cell["id"], mystnb["figure"]["caption"]))
        if cell["cell_type"] == "code" and mystnb.get("image", {}).get("alt"):
            units.append(("alt", cell["id"], mystnb["image"]["alt"]))
    return units


def parse_overlay(text: str) -> dict[tuple[str, str], tuple[str, str]]:
    """(kind, id) -> (hash of the English translated, Chinese text); a code unit's text is the source
    inside its fence."""
    marks = list(MARKER.finditer(text))
    units = {}
    for m, nxt in zip(marks, marks[1:] + [None], strict=True):
        body = text[m.end(): nxt.start() if nxt else len(text)].strip("\n").rstrip()
        key = (m.group(1), m.group(2))
        if key in units:
            raise ValueError(f"unit {key[0]} {key[1]} appears twice")
        if key[0] == "code":
            fenced = FENCE.match(body)
            if not fenced:
                raise ValueError(f"unit code {key[1]}: its text must be the cell's source in one ```python fence")
            body = fenced.group(2)
        units[key] = (m.group(3), body)
    return units


def fence(code: str) -> str:
    """A code unit's text: the source in a python fence longer than any run of backticks in it."""
    ticks = "`" * max(3, 1 + max((len(r) for r in re.findall(r"`+", code)), default=0))
    return f"{ticks}python\n{code.strip(chr(10))}\n{ticks}"


def overlay_path(name: str) -> pathlib.Path:
    return I18N / f"{name}.md"


def read_overlay(name: str) -> dict[tuple[str, str], tuple[str, str]]:
    path = overlay_path(name)
    return parse_overlay(path.read_text(encoding="utf-8")) if path.exists() else {}


def write_overlay(name: str, units: list[tuple[str, str, str, str]]) -> None:
    """units: (kind, id, hash, text) in order."""
    parts = [HEADER.format(name=name)]
    for kind, cid, h, text in units:
        body = fence(text) if kind == "code" else text.strip(chr(10))
        parts.append(f"\n<!-- {kind} {cid} en:{h} -->\n{body}\n")
    overlay_path(name).parent.mkdir(parents=True, exist_ok=True)
    overlay_path(name).write_text("".join(parts), encoding="utf-8")


def skeleton(names: list[str]) -> None:
    """Add to each chapter's overlay the units it lacks, with the English text as the text to replace."""
    for path in chapters():
        if names and path.stem not in names:
            continue
        nb = json.loads(path.read_text(encoding="utf-8"))
        have = read_overlay(path.stem)
        units, added = [], 0
        for kind, cid, en in english_units(nb):
            if (kind, cid) in have:
                units.append((kind, cid, *have[(kind, cid)]))
            else:
                units.append((kind, cid, text_hash(en), en))
                added += 1
        dropped = set(have) - {(k, c) for k, c, _, _ in units}
        write_overlay(path.stem, units)
        print(f"{overlay_path(path.stem).relative_to(ROOT)}: {len(units)} units, {added} added"
              + (f", {len(dropped)} dropped (no longer in English): {sorted(dropped)}" if dropped else ""))


# --- checks ---------------------------------------------------------------------------------------------

def untranslated(en: str, zh: str) -> bool:
    """A unit still in English: no Chinese character where the English has prose (three words or more
    outside code, maths and MyST roles)."""
    if CJK.search(zh):
        return False
    return len(re.findall(r"[A-Za-z]{2,}", prose_of(en))) >= 3


def prose_of(text: str) -> str:
    """The prose of a Markdown text as the site's parser reads it (scripts/reader.py): the text of its
    paragraphs, headings, lists, tables and definitions, of links and images (not their targets), and
    the title and body of prose directives (dropdowns, admonitions); not code, maths, roles,
    substitutions, targets, directives' options or HTML. Blocks are separated by a blank line, a line
    break stays one, and a heading keeps its ``#`` marks (the terminology check skips headings)."""
    from scripts.reader import directive_name, markdown_parser, walk

    blocks: list[str] = []

    def read(src: str) -> None:
        heading = ""
        for tok in markdown_parser().parse(src):
            if tok.type == "heading_open":
                heading = "#" * int(tok.tag[1:]) + " "
            elif tok.type == "inline":  # its text (in emphasis, links and images too) and its line breaks
                kept = [t for t in walk(tok.children or []) if t.type in {"text", "softbreak", "hardbreak"}]
                blocks.append(heading + "".join(t.content if t.type == "text" else "\n" for t in kept))
                heading = ""
            elif (directive := directive_name(tok)) and directive[0] not in NOT_MARKDOWN:
                blocks.append(directive[1])
                read(_directive_body(tok.content))

    read(text)
    return "\n\n".join(b for b in blocks if b.strip())


def _directive_body(content: str) -> str:
    """A directive's content without its ``:option: value`` lines."""
    return "\n".join(ln for ln in content.splitlines() if not re.match(r"^\s*:[\w-]+:", ln))


# Comments a tool reads (noqa, type: ignore, pragma, fmt, %% cells): a translation keeps them as they are.
MACHINE_COMMENT = re.compile(r"#\s*(noqa\b(?::\s*[A-Z]+\d+(?:\s*,\s*[A-Z]+\d+)*)?|type:\s*\S+|pragma:.*|fmt:\s*\w+|%%.*)", re.I)


def _shown(tok: tokenize.TokenInfo) -> str:
    what = "end of line" if tok.type in (tokenize.NEWLINE, tokenize.NL) else tokenize.tok_name[tok.type]
    return what if tok.type in (tokenize.NEWLINE, tokenize.NL, tokenize.ENDMARKER, tokenize.INDENT, tokenize.DEDENT) \
        else f"{what} {tok.string!r}"


def code_difference(en: str, zh: str) -> str | None:
    """How the Chinese source of a code cell differs from the English apart from its comments (None: it
    does not). Both are tokenized and their comments dropped; every other token must be the same, at the
    same line and column (so whitespace inside code lines counts too), and each line keeps its line
    breaks (a comment line stays a line). A comment a tool reads (MACHINE_COMMENT) must stay as it is."""
    try:
        zh_tokens = _tokens(zh)
    except (tokenize.TokenError, SyntaxError) as e:
        return f"the Chinese does not tokenize: {e}"
    en_tokens = _tokens(en)
    breaks = (tokenize.NEWLINE, tokenize.NL, tokenize.ENDMARKER)

    def key(t):  # a line break's column follows the comment before it
        return (t.type, t.start[0]) if t.type in breaks else (t.type, t.string, t.start, t.end)

    a = [t for t in en_tokens if t.type != tokenize.COMMENT]
    b = [t for t in zh_tokens if t.type != tokenize.COMMENT]
    for x, y in zip(a, b, strict=False):
        if key(x) != key(y):
            if (x.type, x.string) == (y.type, y.string):
                return (f"line {x.start[0]}: {_shown(x)} moved from column {x.start[1] + 1} to line {y.start[0]}, "
                        f"column {y.start[1] + 1} (whitespace or a line break changed)")
            where = f"line {x.start[0]}" + ("" if x.type in breaks else f", column {x.start[1] + 1}")
            hint = " (a comment line stays one line)" if {x.type, y.type} & set(breaks[:2]) else ""
            return f"{where}: the English has {_shown(x)}, the Chinese {_shown(y)} (line {y.start[0]}){hint}"
    if len(a) != len(b):
        extra = (a if len(a) > len(b) else b)[min(len(a), len(b))]
        return (f"line {extra.start[0]}: the {'Chinese ends' if len(a) > len(b) else 'English ends'} before "
                f"{_shown(extra)}")
    zh_comments = dict(comments(zh))
    for line, text in comments(en):
        m = MACHINE_COMMENT.match(text)
        if m and m.group(0).strip() not in zh_comments.get(line, ""):
            return f"line {line}: keep the comment {m.group(0).strip()!r} as it is"
    return None


def code_untranslated(en: str, zh: str) -> bool:
    """A code unit whose comments are still in English: three words or more in the English comments
    (other than those a tool reads) and no Chinese character in the Chinese ones."""
    words = " ".join(MACHINE_COMMENT.sub("", c) for _, c in comments(en))
    return not CJK.search(" ".join(c for _, c in comments(zh))) and len(re.findall(r"[A-Za-z]{2,}", words)) >= 3


def chinese_code(en: str, zh: str) -> str:
    """A code unit's source as the Chinese notebook holds it: the English's trailing line breaks kept."""
    return zh.strip("\n") + en[len(en.rstrip("\n")):]


GLUE = re.compile(r"\{glue(?::text|:md|:math|:figure)?\}`([^`:]+)")
REFERENCES = {"doc", "cite", "cite:p", "cite:t", "cite:ps", "cite:ts", "ref", "numref", "eq"}
CODE_DIRECTIVES = {"literalinclude", "code-block", "code", "math"}
NOT_MARKDOWN = CODE_DIRECTIVES | {"eval-rst"}  # directives whose body is not Markdown prose (eval-rst: autodoc's rST)


def invariants(text: str) -> dict[str, set[str]]:
    """What a translation must keep from the English, found by the site's own Markdown parser (as
    scripts/reader.py reads a chapter): glued values, references and citations, inline code, maths,
    code blocks and directives; the bodies of prose directives (dropdowns, admonitions) are read too."""
    from scripts.reader import directive_name, markdown_parser, walk

    found: dict[str, set[str]] = {k: set() for k in ("glued value", "reference", "inline code", "maths", "code block", "directive")}
    norm = lambda t: re.sub(r"\s+", " ", t).strip()  # noqa: E731

    def read(src: str) -> None:
        for tok in walk(markdown_parser().parse(src)):
            if tok.type == "myst_role":
                name, body = tok.meta.get("name", ""), tok.content
                if name.startswith("glue"):
                    found["glued value"].add(body.partition(":")[0])
                elif name in REFERENCES:  # a titled reference may translate its title: {doc}`标题 <target>`
                    m = re.search(r"<([^<>]+)>\s*$", body)
                    found["reference"].add(f"{{{name}}}`{(m.group(1) if m else body).strip()}`")
            elif tok.type == "code_inline":
                found["inline code"].add(norm(tok.content))
            elif tok.type.startswith("math") or tok.type == "amsmath":
                found["maths"].add(norm(tok.content))
            elif tok.type in {"fence", "colon_fence", "code_block"}:
                directive = directive_name(tok)
                if directive is None:
                    found["code block"].add(tok.content.strip())
                    continue
                found["directive"].add("{" + directive[0] + "}")
                if directive[0] in CODE_DIRECTIVES:
                    found["code block"].add(f"{{{directive[0]}}} {directive[1]}\n{tok.content.strip()}")
                else:
                    read(_directive_body(tok.content))

    read(text)
    return found


def invariant_differences(en: str, zh: str) -> list[str]:
    """What the translation ``zh`` lost or added against ``en`` of what must stay unchanged (as sets:
    the Chinese may order them differently)."""
    a, b = invariants(en), invariants(zh)
    out = []
    for what in a:
        if a[what] - b[what]:
            out.append(f"{what} missing: {', '.join(sorted(a[what] - b[what]))}")
        if b[what] - a[what]:
            out.append(f"{what} not in the English: {', '.join(sorted(b[what] - a[what]))}")
    return out


def glued_keys(nb: dict) -> set[str]:
    """The names a chapter glues (read from its stored outputs as the reader editions read them)."""
    import nbformat

    from scripts.reader import glued_values

    return set(glued_values(nbformat.from_dict(nb)))


def chapter_problems(path: pathlib.Path) -> dict[str, list[str]]:
    """Problems of one chapter's translation, by kind: stale, missing, untranslated, changed (what the
    Chinese must keep from the English; a code unit: every token but the comments), orphan (units of
    cells the English no longer has)."""
    nb = json.loads(path.read_text(encoding="utf-8"))
    have = read_overlay(path.stem)
    found: dict[str, list[str]] = {k: [] for k in ("missing", "stale", "untranslated", "changed", "orphan", "glue")}
    keys = glued_keys(nb)
    wanted = set()
    for kind, cid, en in english_units(nb):
        wanted.add((kind, cid))
        unit = f"{kind} {cid}"
        if (kind, cid) not in have:
            found["missing"].append(unit)
            continue
        h, zh = have[(kind, cid)]
        zh = localise_markdown(zh) if kind == "cell" else zh  # checked as the Chinese book holds it
        if h != text_hash(en):
            found["stale"].append(unit)
        if kind == "code":
            if code_untranslated(en, zh):
                found["untranslated"].append(unit)
            if h == text_hash(en) and (differs := code_difference(en, zh)):
                found["changed"].append(f"{unit}: {differs}")
            continue
        if untranslated(en, zh):
            found["untranslated"].append(unit)
        elif h == text_hash(en):
            en_built = localise_markdown(en) if kind == "cell" else en  # the same paths as the Chinese
            found["changed"] += [f"{unit}: {d}" for d in invariant_differences(en_built, zh)]
        found["glue"] += [f"{unit}: {{glue}}`{k}` is not glued by the chapter" for k in GLUE.findall(zh) if k not in keys]
    found["orphan"] = [f"{k} {c}" for k, c in sorted(set(have) - wanted)]
    found |= zh_figures.figure_problems(path)
    return {k: v for k, v in found.items() if v}


def page_problems(name: str) -> dict[str, list[str]]:
    path = I18N / "pages" / f"{name}.md"
    english = (ROOT / "book" / f"{name}.md").read_text(encoding="utf-8")
    if not path.exists():
        return {"missing": [f"page {name}"]}
    m = MARKER.match(path.read_text(encoding="utf-8"))
    if not m or m.group(1) != "page" or m.group(2) != name:
        return {"missing": [f"page {name}: its first line must be <!-- page {name} en:{text_hash(english)} -->"]}
    if m.group(3) != text_hash(english):
        return {"stale": [f"page {name}"]}
    zh = MARKER.sub("", path.read_text(encoding="utf-8"), count=1)
    if untranslated(english, zh):
        return {"untranslated": [f"page {name}"]}
    changed = [f"page {name}: {d}" for d in invariant_differences(english, zh)]
    return {"changed": changed} if changed else {}


# --- terminology ----------------------------------------------------------------------------------------

GLOSSARY = ROOT / "book" / "glossary.md"


def glossary_terms() -> list[tuple[list[str], str]]:
    """(English forms, Chinese term) of every row of the glossary: the English column's text without its
    parenthesised part, and that part (another English name for the same thing); the 中文 column."""
    rows = []
    for line in GLOSSARY.read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if not line.startswith("|") or len(cells) < 4 or cells[0] in {"English", ""} or set(cells[0]) <= {"-"}:
            continue
        english, zh = cells[0], cells[1]
        alt = re.findall(r"\(([^)]*)\)", english)
        main = re.sub(r"\s*\([^)]*\)", "", english).strip()
        rows.append(([main, *alt], zh))
    return rows


def _uses(text: str, form: str) -> bool:
    return re.search(r"(?<![\w-])" + re.escape(form) + r"(?:s|es)?(?![\w-])", text, re.I) is not None


def _headingless(text: str) -> str:
    return re.sub(r"^#+ .*$", " ", text, flags=re.M)


# The book's core terms are glossed once in the book, in the first chapter (book order) that uses them, not in
# every chapter: a reader meets 注意力（attention） in the first chapter and, by the fifth, no longer needs the
# English after 注意力, 词元, 查询, 键 and 值 (a native editor counted 20-38 glosses a chapter). Every other glossary
# term keeps its English at its first use in each chapter, since chapters are also read on their own.
CORE_TERMS = ("注意力", "词元", "查询", "键", "值")


def terminology_problems(english: str, chinese: str, terms=None, glossed_before=frozenset()) -> list[str]:
    """Each glossary term the English prose uses must appear in the Chinese prose as the glossary's
    Chinese term, with an English form in parentheses right after its first use outside headings
    (a one-character term: after some use); the core terms in ``glossed_before`` (glossed in an earlier
    chapter) need no English. ``english``/``chinese``: a chapter's prose, in order."""
    terms = glossary_terms() if terms is None else terms
    out = []
    for forms, zh in terms:
        if not any(_uses(english, f) for f in forms):
            continue
        body = _headingless(chinese)
        for _, other in terms:  # hide longer terms that contain this one (注意力 inside 自注意力)
            if other != zh and zh in other:
                body = body.replace(other, "\u25a1" * len(other))
        if zh in glossed_before:
            if zh not in body:
                out.append(f"{zh} ({forms[0]}) is not used; the English chapter uses {forms[0]!r}")
            continue
        if zh not in chinese:
            out.append(f"{zh} ({forms[0]}) is not used; the English chapter uses {forms[0]!r}")
            continue
        paren = re.compile(re.escape(zh) + r"[*_]*\s*[（(]([^）)]*)[）)]")

        def glossed(m, forms=forms) -> bool:
            return m is not None and any(_uses(m.group(1), f) for f in forms)

        if len(zh) == 1:
            if not any(glossed(m) for m in paren.finditer(body)):
                out.append(f"{zh}（{forms[0]}） is never written with its English term in parentheses")
            continue
        first = body.find(zh)
        if first < 0:
            continue  # used only inside longer terms or headings
        if not glossed(paren.match(body, first)):
            out.append(f"the first use of {zh} lacks its English term: write {zh}（{forms[0]}）; it reads: "
                       f"...{body[max(0, first - 10): first + len(zh) + 12]}...")
    return out


def chapter_prose(path: pathlib.Path) -> tuple[str, str]:
    """A chapter's English and Chinese prose (markdown cells in order, without code, maths and roles)."""
    nb = json.loads(path.read_text(encoding="utf-8"))
    have = read_overlay(path.stem)
    en, zh = [], []
    for kind, cid, text in english_units(nb):
        if kind == "cell":
            en.append(prose_of(text))
            zh.append(prose_of(localise_markdown(have.get((kind, cid), ("", ""))[1])))
    return "\n\n".join(en), "\n\n".join(zh)


def problems() -> dict[str, dict[str, list[str]]]:
    out = {p.stem: chapter_problems(p) for p in chapters()}
    glossed: set[str] = set()  # core terms glossed in an earlier chapter (CORE_TERMS)
    for p in chapters():
        english, chinese = chapter_prose(p)
        terms = terminology_problems(english, chinese, glossed_before=frozenset(glossed))
        if terms:
            out[p.stem]["terms"] = terms
        glossed |= {zh for forms, zh in glossary_terms() if zh in CORE_TERMS and any(_uses(english, f) for f in forms)}
    out.update({f"pages/{n}": page_problems(n) for n in PAGES})
    out["docstrings"] = zh_docstrings.problems()
    return {k: v for k, v in out.items() if v}


# --- what changed ---------------------------------------------------------------------------------------

def english_at(name: str, kind: str, cid: str, want_hash: str) -> str | None:
    """The English text of a unit as it was when its hash was ``want_hash`` (found in git history)."""
    rel = f"book/{name}.md" if kind == "page" else f"book/{name}.ipynb"
    revs = subprocess.run(["git", "log", "--format=%H", "--", rel], cwd=ROOT, capture_output=True, text=True).stdout.split()
    for rev in revs:
        blob = subprocess.run(["git", "show", f"{rev}:{rel}"], cwd=ROOT, capture_output=True, text=True)
        if blob.returncode:
            continue
        if kind == "page":
            if text_hash(blob.stdout) == want_hash:
                return blob.stdout
            continue
        for k, c, en in english_units(json.loads(blob.stdout)):
            if (k, c) == (kind, cid) and text_hash(en) == want_hash:
                return en
    return None


def diff(name: str, unit: str) -> int:
    import difflib

    kind, _, cid = unit.partition(" ")
    if kind == "page":
        m = MARKER.match((I18N / "pages" / f"{name}.md").read_text(encoding="utf-8"))
        now = (ROOT / "book" / f"{name}.md").read_text(encoding="utf-8")
        old_hash = m.group(3)
    else:
        nb = json.loads((ROOT / "book" / f"{name}.ipynb").read_text(encoding="utf-8"))
        now = next((en for k, c, en in english_units(nb) if (k, c) == (kind, cid)), "")
        old_hash = read_overlay(name)[(kind, cid)][0]
    old = english_at(name, kind, cid, old_hash)
    if old is None:
        print(f"the English that hash {old_hash} translated is not in this clone's history; the English now:\n{now}")
        return 1
    sys.stdout.writelines(difflib.unified_diff(old.splitlines(True), now.splitlines(True), "translated", "now"))
    return 0


# --- build ----------------------------------------------------------------------------------------------

def strings() -> dict:
    return yaml.safe_load((I18N / "strings.yml").read_text(encoding="utf-8"))


# A line break between two Chinese characters (or Chinese punctuation) shows in HTML as a space: the
# build joins such lines of prose. A heading, a directive line or its options end where they end.
_CJK = "\u3000-\u303f\u4e00-\u9fff\uff01-\uff5e"
_ENDS_A_BLOCK = re.compile(r"^\s*(#|:::|```|:[\w-]+:)")


def _join_cjk_lines(text: str) -> str:
    out: list[str] = []
    for line in text.split("\n"):
        if (out and re.search(f"[{_CJK}]$", out[-1]) and re.match(f"[{_CJK}]", line)
                and not _ENDS_A_BLOCK.match(out[-1])):
            out[-1] += line
        else:
            out.append(line)
    return "\n".join(out)


def localise_markdown(text: str) -> str:
    """A translation as the Chinese book holds it: paths written from book/ made to work from zh/book/,
    and lines broken between Chinese characters joined."""
    return _join_cjk_lines(re.sub(r"(\{literalinclude\}\s+)\.\./", r"\1../../", text))


def chinese_notebook(path: pathlib.Path) -> tuple[dict, list[str]]:
    """The Chinese notebook of one English chapter, and the units that had no translation (kept in English;
    a code cell also when its unit is stale or changes more than comments: never old or drifted code)."""
    nb = json.loads(path.read_text(encoding="utf-8"))
    have = read_overlay(path.stem)
    zh_nb, missing = copy.deepcopy(nb), []
    for cell in zh_nb["cells"]:
        en_hash = zh_figures.english_hash(cell) if zh_figures.images(cell) else None  # before its comments change
        for kind, cid, en in english_units({"cells": [cell]}):
            if (kind, cid) not in have or not have[(kind, cid)][1].strip():
                missing.append(f"{kind} {cid}")
                continue
            h, text = have[(kind, cid)]
            if kind == "code":
                if h != text_hash(en) or code_difference(en, text):
                    missing.append(f"{kind} {cid} (stale or changed: the English code kept)")
                else:
                    cell["source"] = chinese_code(en, text)
            elif kind == "cell":
                cell["source"] = localise_markdown(text)
            elif kind == "caption":
                cell["metadata"]["mystnb"]["figure"]["caption"] = text
            else:
                cell["metadata"]["mystnb"]["image"]["alt"] = text
        if cell["cell_type"] == "markdown" and (("cell", cell["id"]) not in have):
            cell["source"] = localise_markdown(_source(cell))
        if cell["cell_type"] == "code" and cell.get("outputs"):
            cell["outputs"] = [chinese_output(o) for o in cell["outputs"]]
            if en_hash and not zh_figures.replace_images(path.stem, cell, en_hash):
                missing.append(f"figure {cell['id']} (none in Chinese, or stale: the English figure kept)")
    # The explorers' saved state speaks Chinese where the notebook is opened (JupyterLab, Colab): their
    # front ends write their words in the model's lang (on the site, the page's language wins anyway).
    saved = zh_nb.get("metadata", {}).get("widgets", {}).get("application/vnd.jupyter.widget-state+json", {})
    for model in saved.get("state", {}).values():
        if model.get("model_module") == "anywidget":
            model["state"]["lang"] = "zh"
    return zh_nb, missing


# --- outputs: the English run's, their words in Chinese ---------------------------------------------------
#
# The package's output objects (attn.book.viz.Table and Results, attn.diagnose.Report and Finding,
# attn.book.exercises.Verdict) write their words through one string table per language (attn._locale).
# The Chinese book does not re-run a chapter: it converts the English run's stored outputs through the
# same table, so every number stays the English run's (tests/test_zh_outputs.py checks both).

_TEXT_NODE = re.compile(r">([^<>]+)<")
_HEADLINE = re.compile(r"\A<p><b>(.*?)</b>")
_ROW = re.compile(r"<tr>(.*?)</tr>", re.S)
_CELL = re.compile(r"<t([hd])\b[^>]*>(.*?)</t\1>", re.S)
_FINDING = re.compile(r"\A(ok|FAIL|info)  ([^:\n]+): (.*?)(?:\n  why: (.*?))?(?:\n  fix: (.*?))?\Z", re.S)


def _joined(value) -> str:
    return "".join(value) if isinstance(value, list) else value


def translate_html(html_text: str, lang: str = "zh") -> str:
    """An output's HTML with the text between its tags translated (attn._locale.translate); markup kept."""
    from html import escape, unescape

    from attn._locale import translate

    def node(m: re.Match) -> str:
        raw = m.group(1)
        text = unescape(raw)
        core = text.strip()
        new = translate(core, lang)
        if new == core:
            return m.group(0)
        lead, trail = text[: len(text) - len(text.lstrip())], text[len(text.rstrip()):]
        return ">" + escape(lead + new + trail, quote=False) + "<"

    return _TEXT_NODE.sub(node, html_text)


def output_object(data: dict):
    """The package's output object that wrote a stored output (a Table, Results, Report, Finding or
    Verdict rebuilt from its HTML, or a Finding from its text), or None for any other output."""
    from html import unescape

    from attn import diagnose
    from attn.book import exercises, viz

    page = _joined(data.get("text/html", ""))
    cells = lambda row: [unescape(c) for _, c in _CELL.findall(row)]  # noqa: E731
    rows = [cells(r) for r in _ROW.findall(page)]
    if 'class="attn-table attn-results"' in page:
        obj = viz.Results.__new__(viz.Results)
        obj.items = [tuple(r) for r in rows]
        return obj if all(len(r) == 2 for r in rows) else None
    head = _HEADLINE.match(page)
    if head and "<table class='attn-table'>" in page:
        m = re.fullmatch(r"diagnose (.*): (?:all checks passed|\d+ of \d+ checks failed)", unescape(head.group(1)), re.S)
        passed = {"ok": True, "FAIL": False, "info": None}
        findings = [diagnose.Finding(r[1], passed.get(r[0], False), r[2], r[3], r[4]) for r in rows[1:] if len(r) == 5]
        return diagnose.Report(m.group(1), findings) if m and findings and len(findings) == len(rows) - 1 else None
    if 'class="attn-table"' in page:
        obj = viz.Table.__new__(viz.Table)
        obj.headers, obj.rows = rows[0], rows[1:]
        return obj if rows and all(len(r) == len(rows[0]) for r in rows) else None
    if head and page.endswith("</table>"):
        m = re.fullmatch(r"(.*): (?:correct|not yet) \(\d+/\d+ cases pass\)", unescape(head.group(1)), re.S)
        cases = [(r[1], r[0] == "\u2713", r[2]) for r in rows if len(r) == 3]
        return exercises.Verdict(m.group(1), cases) if m and len(cases) == len(rows) else None
    if not page and "text/plain" in data:
        m = _FINDING.match(_joined(data["text/plain"]))
        if m:
            status, name, value, why, fix = m.groups()
            return diagnose.Finding(name, {"ok": True, "FAIL": False, "info": None}[status], value, why or "", fix or "")
    return None


_MD_CELL = re.compile(r"(?<=\|)([^|\n]+)(?=\|)")


def translate_markdown(text: str, lang: str = "zh") -> str:
    """A chapter's Markdown output (a pipe table and the lines around it) with each table cell and each
    other line translated (attn._locale.translate); the table's pipes, rules and spacing kept."""
    from attn._locale import translate

    def piece(core: str) -> str:
        stripped = core.strip()
        new = translate(stripped, lang) if stripped and set(stripped) - set("-: ") else stripped
        return core[: len(core) - len(core.lstrip())] + new + core[len(core.rstrip()):]

    lines = []
    for line in text.split("\n"):
        if line.lstrip().startswith("|"):
            lines.append(_MD_CELL.sub(lambda m: piece(m.group(1)), line))
        else:
            lines.append(piece(line) if line.strip() else line)
    return "\n".join(lines)


def chinese_output(output: dict, lang: str = "zh") -> dict:
    """A stored output with the words of the package's output objects in ``lang``: its HTML translated text
    by text, its text rewritten by the object rebuilt from the output (only where that object writes the
    English text exactly as stored); a Markdown output (a chapter's table) cell by cell and line by line
    (:func:`translate_markdown`); any other output as it is."""
    from attn._locale import using

    data = output.get("data")
    if data and "text/markdown" in data:
        new = copy.deepcopy(output)
        new["data"]["text/markdown"] = translate_markdown(_joined(data["text/markdown"]), lang)
        return new
    if not data or ("text/html" not in data and "text/plain" not in data):
        return output
    obj = output_object(data)
    if obj is None:
        return output
    new = copy.deepcopy(output)
    if "text/html" in data:
        new["data"]["text/html"] = translate_html(_joined(data["text/html"]), lang)
    if "text/plain" in data:
        with using("en"):
            same = repr(obj) == _joined(data["text/plain"])
        if same:
            with using(lang):
                new["data"]["text/plain"] = repr(obj)
    return new


def _write_notebook(nb: dict, target: pathlib.Path) -> None:
    import nbformat

    target.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nbformat.from_dict(nb), str(target))


def config() -> dict:
    """zh/_config.yml: the English configuration, read from zh/ and in Chinese."""
    en = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
    s = strings()
    cfg = copy.deepcopy(en)
    cfg["title"] = s["title"]
    cfg["author"] = s["author"]
    cfg["exclude_patterns"] = ["_build", "reader", "**.ipynb_checkpoints"]
    cfg["bibtex_bibfiles"] = ["../" + b for b in en["bibtex_bibfiles"]]
    cfg["repository"]["path_to_book"] = "zh/" + en["repository"]["path_to_book"]
    cfg["html"]["extra_footer"] = s["footer"]
    sph = cfg["sphinx"]
    sph["local_extensions"] = {k: "../" + v for k, v in en["sphinx"]["local_extensions"].items()}
    c = sph["config"]
    c["language"] = "zh_CN"
    c["attn_other_edition"] = s["switch"]
    c["attn_index_link"] = s["index_link"]
    c["nb_code_prompt_show"], c["nb_code_prompt_hide"] = s["code_prompt"]["show"], s["code_prompt"]["hide"]
    c["notfound_urls_prefix"] = en["sphinx"]["config"]["notfound_urls_prefix"] + "zh/"
    for key in ("html_extra_path", "html_static_path", "templates_path"):
        c[key] = ["../" + p for p in en["sphinx"]["config"][key]]
    c["html_favicon"] = "../" + en["sphinx"]["config"]["html_favicon"]
    # the footer's copyright line (_templates/copyright.html): the theme's Chinese catalogue leaves it in English
    c["html_context"] = {**en["sphinx"]["config"].get("html_context", {}), "attn_copyright": s["copyright"]}
    # the comments of the package's source shown with {literalinclude} (_ext/attn_source_comments.py)
    c["attn_source_comments"] = "../i18n/zh/source_comments.yml"
    # the docstrings of the API reference (_ext/attn_docstrings.py); napoleon reads 形状 as it reads Shape
    c["attn_docstrings"] = "../i18n/zh/docstrings"
    c["napoleon_custom_sections"] = [*en["sphinx"]["config"]["napoleon_custom_sections"], "形状"]
    # the theme's words (_ext/attn_theme_words.py): message catalogues (catalogues()), the English of the
    # templates replaced in the written pages, and the extensions' settings in English
    words = s["theme"]
    c["locale_dirs"] = [LOCALE]
    c["attn_theme_words"] = dict(words["pages"])
    c.update(copy.deepcopy(words["config"]))
    return cfg


LOCALE = "locale"  # zh/locale/zh_CN/LC_MESSAGES/<domain>.po; the compiled .mo files are not committed


def po_text(table: dict[str, str], language: str = "zh_CN") -> str:
    """A message catalogue (.po) holding ``table`` (English message -> translation)."""
    def quoted(text: str) -> str:
        return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\t", "\\t") + '"'

    head = (f'msgid ""\nmsgstr ""\n"Language: {language}\\n"\n"MIME-Version: 1.0\\n"\n'
            '"Content-Type: text/plain; charset=UTF-8\\n"\n"Content-Transfer-Encoding: 8bit\\n"\n')
    return head + "".join(f"\nmsgid {quoted(en)}\nmsgstr {quoted(zh)}\n" for en, zh in table.items())


def catalogues() -> dict[str, str]:
    """zh/locale/...: the theme's words that go through gettext, a message catalogue per domain (path in
    zh/ -> text of the .po file)."""
    return {f"{LOCALE}/zh_CN/LC_MESSAGES/{domain}.po": GENERATED.format(src="i18n/zh/strings.yml (theme)") + po_text(table)
            for domain, table in strings()["theme"]["catalogues"].items()}


def toc() -> dict:
    en = yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf-8"))
    captions = strings()["parts"]
    out = copy.deepcopy(en)
    for part in out["parts"]:
        part["caption"] = captions[part["caption"]]
    return out


def title(path: pathlib.Path) -> str:
    """A notebook's title: its first level-one heading."""
    for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
        m = re.search(r"^# (.+)$", _source(cell), re.M) if cell["cell_type"] == "markdown" else None
        if m:
            return m.group(1).strip()
    return path.stem


GENERATED = "# Generated by `python -m scripts.zh build` from {src}: edit that file (or i18n/zh/), not this one.\n"


def build() -> list[str]:
    """Write zh/ and return the units that had no translation."""
    from scripts import reader
    from scripts.notebooks import repository

    missing = []
    (ZH / "book").mkdir(parents=True, exist_ok=True)
    for name, data, src in (("_config.yml", config(), "_config.yml"), ("_toc.yml", toc(), "_toc.yml")):
        (ZH / name).write_text(GENERATED.format(src=src) + yaml.safe_dump(data, allow_unicode=True, sort_keys=False, width=100),
                               encoding="utf-8")
    for name, text in catalogues().items():
        (ZH / name).parent.mkdir(parents=True, exist_ok=True)
        if not (ZH / name).exists() or (ZH / name).read_text(encoding="utf-8") != text:  # Sphinx compiles a newer .po
            (ZH / name).write_text(text, encoding="utf-8")
    for po in (ZH / LOCALE).rglob("*.po"):  # a domain no longer in the table
        if po.relative_to(ZH).as_posix() not in catalogues():
            po.unlink()
    for name in PAGES:
        page = I18N / "pages" / f"{name}.md"
        if page.exists():
            text = MARKER.sub("", page.read_text(encoding="utf-8"), count=1).lstrip("\n")
        else:
            text, _ = (ROOT / "book" / f"{name}.md").read_text(encoding="utf-8"), missing.append(f"page {name}")
        (ZH / "book" / f"{name}.md").parent.mkdir(parents=True, exist_ok=True)
        (ZH / "book" / f"{name}.md").write_text(localise_markdown(text), encoding="utf-8")
    for page in (ZH / "book").rglob("*.md"):  # a page no longer in _toc.yml (a renamed API page)
        if page.relative_to(ZH / "book").with_suffix("").as_posix() not in PAGES:
            page.unlink()
    paths = []
    for path in chapters():
        nb, lacking = chinese_notebook(path)
        missing += [f"{path.stem}: {u}" for u in lacking]
        target = ZH / "book" / path.name
        _write_notebook(nb, target)
        paths.append(target)
    names = {p.stem for p in chapters()}
    reader.write_all(paths, repository()[0], names, lang="zh", titles={p.stem: title(p) for p in paths})
    return missing


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in {"skeleton", "build", "check", "stale", "diff", "figures", "docstrings"}:
        print(__doc__)
        return 2
    if argv[0] == "figures":
        return zh_figures.main(argv[1:])
    if argv[0] == "docstrings":
        return zh_docstrings.main(argv[1:])
    if argv[0] == "skeleton":
        skeleton(argv[1:])
    elif argv[0] == "build":
        missing = build()
        print(f"wrote {ZH.relative_to(ROOT)}/" + (f"; {len(missing)} units kept in English (no translation)" if missing else ""))
    elif argv[0] == "diff":
        return diff(argv[1], " ".join(argv[2:]))
    else:
        found = problems()
        for where, kinds in found.items():
            for kind, items in kinds.items():
                if argv[0] == "check" or kind == "stale":
                    for item in items:
                        print(f"{where}: {kind}: {item}")
        if argv[0] == "stale" and any("stale" in k for k in found.values()):
            print("\nSee what changed: python -m scripts.zh diff CHAPTER 'cell ID' (or 'page NAME')")
        return 1 if found and argv[0] == "check" else 0
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
