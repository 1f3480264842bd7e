"""Reader editions: each chapter as plain Jupyter notebook that reads the same as the site.

The chapters in ``book/`` are written for the static site: their markdown uses MyST roles and
directives (``{glue:text}``, ``{cite}``, ``{doc}``, ``{literalinclude}``, admonitions, dropdowns)
that only Sphinx renders. Colab, Binder, JupyterLab and the site's download button open the reader
edition instead (``reader/book/<chapter>.ipynb``), made from the executed source notebook by

    python -m scripts.notebooks reader            # every chapter in _toc.yml

In it every glued value is written into the prose as the site shows it, citations read
"(Vaswani et al., 2017)", ``{doc}`` links point at the sibling reader notebooks, included package
source is inlined as a code block, admonitions become block quotes and solutions ``<details>``.
Code cells and their outputs are kept (glue records, which Jupyter cannot display, are dropped).
The Markdown is read by the site's own parser (markdown-it-py as myst-parser sets it up, with the
book's MyST extensions), directive options by myst-parser against the directives' Sphinx classes, and
included source by Sphinx's ``LiteralIncludeReader``; only the spans the parser finds are rewritten.
The conversion is deterministic; ``tests/test_reader.py`` checks the committed editions are up to
date and that none contains MyST syntax Jupyter cannot render.
"""

from __future__ import annotations

import copy
import functools
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[1]
READER_DIR = ROOT / "reader"
GLUE_MIME = "application/papermill.record/"

ADMONITIONS = {"note": "Note", "tip": "Tip", "warning": "Warning", "important": "Important",
               "caution": "Caution", "seealso": "See also", "hint": "Hint", "attention": "Attention"}


class ReaderError(ValueError):
    """A construct in a chapter that the reader edition cannot express."""


# --- values and references ---------------------------------------------------------------------------

def glued_values(nb) -> dict[str, str]:
    """Every value the notebook glued, as the text the site shows (myst-nb's plain-text rule)."""
    from ast import literal_eval

    values: dict[str, str] = {}
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            name = ((out.get("metadata") or {}).get("scrapbook") or {}).get("name")
            text = out.get("data", {}).get(GLUE_MIME + "text/plain")
            if not name or text is None:
                continue
            try:
                value = literal_eval(text)
            except (SyntaxError, ValueError):
                value = text
            values[name] = str(value)
    return values


def _is_glue_record(out) -> bool:
    return any(k.startswith(GLUE_MIME) for k in out.get("data", {}))


class Citations:
    """``{cite}`` keys as "Vaswani et al., 2017", from references.bib."""

    def __init__(self, bib: pathlib.Path):
        from pybtex.database import parse_file

        self.entries = parse_file(str(bib)).entries

    def label(self, key: str) -> tuple[str, str]:
        if key not in self.entries:
            raise ReaderError(f"citation key {key!r} is not in references.bib")
        entry = self.entries[key]
        people = entry.persons.get("author") or entry.persons.get("editor") or []
        names = [" ".join(p.last_names).replace("{", "").replace("}", "") for p in people]
        if not names:
            who = entry.fields.get("title", key).strip("{}")
        elif len(names) == 1:
            who = names[0]
        elif len(names) == 2:
            who = f"{names[0]} and {names[1]}"
        else:
            who = f"{names[0]} et al."
        return who, entry.fields.get("year", "n.d.")

    def render(self, role: str, body: str) -> str:
        labels = [self.label(k.strip()) for k in body.split(",") if k.strip()]
        if role == "cite:t":
            return "; ".join(f"{who} ({year})" for who, year in labels)
        return "(" + "; ".join(f"{who}, {year}" for who, year in labels) + ")"


# --- the parser --------------------------------------------------------------------------------------
#
# The chapters' Markdown is read by the parser the site uses: markdown-it-py set up by myst-parser
# with the book's myst_enable_extensions (_config.yml). It finds the roles, directives, targets and
# substitutions; code spans and code blocks that mention one are code, and stay as they are. The
# conversion edits the cell's text in place, at the spans the parser found, so everything else
# (line breaks, spacing, math) reaches the reader edition byte for byte.

@functools.cache
def markdown_parser():
    """A MarkdownIt parser set up as myst-parser sets it up for this book; roles keep their spans."""
    import yaml
    from markdown_it.renderer import RendererHTML
    from myst_parser.config.main import MdParserConfig
    from myst_parser.parsers.mdit import create_md_parser

    extensions = yaml.safe_load((ROOT / "_config.yml").read_text())["parse"]["myst_enable_extensions"]
    md = create_md_parser(MdParserConfig(enable_extensions=set(extensions)), RendererHTML)
    role_rule = next(r.fn for r in md.inline.ruler.__rules__ if r.name == "myst_role")

    def located_role(state, silent):  # myst-parser's role rule, recording where the role stands
        start = state.pos
        found = role_rule(state, silent)
        if found and not silent:
            state.tokens[-1].meta["span"] = (start, state.pos)
        return found

    md.inline.ruler.at("myst_role", located_role)
    return md


def _directive_name(token) -> tuple[str, str] | None:
    """``(name, argument)`` of a ```` ```{name} argument ```` or ``:::{name}`` fence, else None."""
    info = token.info.strip()
    if token.type not in {"fence", "colon_fence"} or not info.startswith("{") or "}" not in info:
        return None
    name, _, arg = info[1:].partition("}")
    return name, arg.strip()


def _walk(tokens):
    for token in tokens:
        yield token
        yield from _walk(token.children or [])


def myst_leftover(text: str) -> str | None:
    """The first MyST construct in ``text`` that Jupyter would show as raw text, or None.

    Roles, directives and colon fences, ``(label)=`` targets and ``{{ substitutions }}``, as the
    parser finds them: a code span or a code block that mentions one is not a leftover.
    """
    for token in _walk(markdown_parser().parse(text)):
        if token.type == "myst_role":
            return "{%s}`%s`" % (token.meta["name"], token.content)
        if token.type == "colon_fence" or _directive_name(token):
            return f"{token.markup}{token.info}"
        if token.type == "myst_target":
            return f"({token.content})="
        if token.type.startswith("substitution_"):
            return "{{ %s }}" % token.content.strip()
    return None


# --- directives --------------------------------------------------------------------------------------

@functools.cache
def _directive_classes() -> dict:
    """The directives a chapter may use, as the site's Sphinx extensions define them (their options)."""
    from docutils.parsers.rst.directives import admonitions
    from sphinx.directives.code import CodeBlock, LiteralInclude
    from sphinx.directives.other import SeeAlso
    from sphinx.directives.patches import MathDirective
    from sphinx_design.dropdown import DropdownDirective
    from sphinx_togglebutton import Toggle

    classes = {name: getattr(admonitions, name.capitalize()) for name in ADMONITIONS if name != "seealso"}
    return {**classes, "seealso": SeeAlso, "admonition": admonitions.Admonition, "dropdown": DropdownDirective,
            "toggle": Toggle, "code-block": CodeBlock, "code": CodeBlock, "math": MathDirective,
            "literalinclude": LiteralInclude}


def literalinclude(arg: str, opts: dict, base: pathlib.Path) -> str:
    """The code a ``{literalinclude}`` shows, as a fenced block, read by Sphinx's own include reader."""
    from sphinx.config import Config
    from sphinx.directives.code import LiteralIncludeReader

    path = (base / arg).resolve()
    if not path.is_file():
        raise ReaderError(f"literalinclude: {arg} not found (from {base})")
    shown = {"pyobject", "dedent", "language", "lines", "start-at", "start-after", "end-at", "end-before",
             "caption", "linenos", "emphasize-lines"}  # the rest would change what the site shows
    if set(opts) - shown:
        raise ReaderError(f"literalinclude: options {sorted(set(opts) - shown)} are not supported")
    try:
        text, _ = LiteralIncludeReader(str(path), opts, Config()).read()
    except ValueError as e:
        raise ReaderError(f"literalinclude {arg}: {e}") from None
    lines = text.splitlines()
    while lines and not lines[-1].strip():
        lines.pop()
    language = opts.get("language", "python")
    where = f"*From `{path.relative_to(ROOT)}`" + (f", `{opts['pyobject']}`" if "pyobject" in opts else "") + ":*\n\n"
    return where + f"```{language}\n" + "\n".join(lines) + "\n```"


def _directive(name: str, arg: str, content: str, ctx: "Context") -> str:
    from myst_parser.parsers.directives import MarkupError, parse_directive_text

    classes = _directive_classes()
    if name not in classes:
        raise ReaderError(f"directive {{{name}}} has no reader-edition form; use one the converter knows")
    try:
        parsed = parse_directive_text(classes[name], arg, content)
    except MarkupError as e:
        raise ReaderError(f"directive {{{name}}}: {e}") from None
    if parsed.warnings:
        raise ReaderError(f"directive {{{name}}}: {parsed.warnings[0].msg}")
    title = " ".join(parsed.arguments)
    if name == "literalinclude":
        return literalinclude(title, parsed.options, ctx.base)
    if name in {"code-block", "code"}:
        return f"```{title}\n" + "\n".join(parsed.body) + "\n```"
    if name == "math":
        return "$$\n" + "\n".join(parsed.body) + "\n$$"
    inner = convert_markdown("\n".join(parsed.body), ctx).strip("\n")
    if name in ADMONITIONS or name == "admonition":
        title = title or ADMONITIONS[name]
        return "\n".join(["> **" + title + "**", ">"] + [("> " + ln).rstrip() for ln in inner.splitlines()])
    return f"<details>\n<summary>{title or 'Show'}</summary>\n\n{inner}\n\n</details>"  # dropdown, toggle


# --- markdown ----------------------------------------------------------------------------------------

class Context:
    def __init__(self, values: dict[str, str], citations: Citations, base: pathlib.Path,
                 chapters: set[str], repo_url: str):
        self.values, self.citations, self.base = values, citations, base
        self.chapters, self.repo_url = chapters, repo_url


def _role(role: str, body: str, ctx: Context) -> str:
    if role in {"glue:text", "glue"}:
        key, _, fmt = body.partition(":")
        if key not in ctx.values:
            raise ReaderError(f"{{glue:text}}`{key}` has no stored value: re-execute the chapter")
        value = ctx.values[key]
        if fmt:
            from ast import literal_eval

            value = format(literal_eval(value), fmt)
        return value
    if role in {"cite", "cite:p", "cite:t", "cite:ps", "cite:ts"}:
        return ctx.citations.render("cite:t" if role.startswith("cite:t") else "cite:p", body)
    if role == "doc":
        from sphinx.util.nodes import split_explicit_title

        _, text, target = split_explicit_title(body)  # {doc}`text <target>`, as Sphinx reads it
        name = pathlib.PurePosixPath(target).name
        if name in ctx.chapters:
            href = f"{name}.ipynb"
            text = text if text != target else name.replace("_", " ").capitalize()
        else:
            href = f"{ctx.repo_url}/blob/main/book/{name}.md"
            text = text if text != target else name.capitalize()
        return f"[{text}]({href})"
    if role == "math":
        return f"${body}$"
    raise ReaderError(f"role {{{role}}} has no reader-edition form")


def _line_starts(text: str) -> list[int]:
    starts = [0]
    for n, ch in enumerate(text):
        if ch == "\n":
            starts.append(n + 1)
    return starts


def _role_edits(inline, in_cell: bool, text: str, starts: list[int], cursor: dict[int, int], ctx: Context):
    """(start, end, replacement) in ``text`` for each role of one inline token.

    The parser gives a role's span in the token's content: the token's source lines with their
    block prefixes (indentation, ``>`` and list markers, table pipes) taken off. Each content line is
    found again in its source line (at its end, or in a table cell after the previous cell).
    """
    if not any(t.type == "myst_role" for t in _walk(inline.children or [])):
        return []
    if inline.map is None:
        raise ReaderError(f"a role in {inline.content!r}, which has no place in the cell's lines")
    lines = text.split("\n")
    content_lines = inline.content.split("\n")
    offsets, where = [], 0  # where each content line starts in the source
    for i, line in enumerate(content_lines):
        n = inline.map[0] + i
        source = lines[n]
        col = source.find(line, cursor.get(n, 0)) if in_cell else len(source.rstrip()) - len(line.rstrip())
        if col < 0 or not source.startswith(line.rstrip(), col):
            raise ReaderError(f"cannot place the parsed line {line!r} in {source!r}")
        cursor[n] = col + len(line)
        offsets.append((where, starts[n] + col))
        where += len(line) + 1

    def absolute(pos: int) -> int:
        line_start, at = max((o for o in offsets if o[0] <= pos), key=lambda o: o[0])
        return at + pos - line_start

    edits = []
    for token in inline.children or []:
        if token.type == "myst_role":
            a, b = token.meta["span"]
            start, end = absolute(a), absolute(b - 1) + 1
            raw = inline.content[a:b]
            if text[start:end] != raw:
                raise ReaderError(f"cannot place the role {raw!r} in the cell")
            edits.append((start, end, _role(token.meta["name"], token.content, ctx)))
        elif any(t.type == "myst_role" for t in _walk(token.children or [])):
            raise ReaderError(f"a role inside {token.type} has no reader-edition form")
    return edits


def convert_markdown(text: str, ctx: Context) -> str:
    """A chapter's Markdown cell as plain Jupyter Markdown: roles and directives replaced, the rest kept."""
    starts = _line_starts(text)
    lines = text.split("\n")
    edits, cursor, in_cell = [], {}, False
    for token in markdown_parser().parse(text):
        if token.type in {"th_open", "td_open"}:
            in_cell = True
        elif token.type in {"th_close", "td_close"}:
            in_cell = False
        elif token.type == "inline":
            edits += _role_edits(token, in_cell, text, starts, cursor, ctx)
        elif directive := _directive_name(token):
            first, last = token.map[0], token.map[1] - 1
            closing = lines[last].strip()
            if last == first or closing.strip(token.markup[0]) or len(closing) < len(token.markup):
                raise ReaderError(f"unclosed {token.markup}{{{directive[0]}}} directive")
            if token.level > 0 or lines[first] != lines[first].lstrip():
                raise ReaderError(f"{token.markup}{{{directive[0]}}}: a directive inside a list or quote "
                                  "has no reader-edition form")
            end = starts[last + 1] - 1 if last + 1 < len(starts) else len(text)
            edits.append((starts[first], end, _directive(*directive, token.content, ctx)))
    for start, end, new in sorted(edits, reverse=True):
        text = text[:start] + new + text[end:]
    return text


# --- notebooks ---------------------------------------------------------------------------------------

# Tags under which the site hides or removes a cell's code (checks, glue, the Colab set-up): the
# reader editions keep these cells, since they run, but fold their code.
HIDDEN_TAGS = {"hide-input", "hide-cell", "remove-input", "remove-cell"}


def fold_if_hidden(cell) -> None:
    """Fold the code of a cell the site hides: JupyterLab and Notebook 7 read
    ``jupyter.source_hidden``, Colab reads ``cellView: form`` (its "Show code" fold)."""
    if HIDDEN_TAGS & set(cell.metadata.get("tags", [])):
        cell.metadata.setdefault("jupyter", {})["source_hidden"] = True
        cell.metadata["cellView"] = "form"


def header_cell_source(stem: str, repo_url: str) -> str:
    return (
        f"*Reader edition of `book/{stem}.ipynb` from [{repo_url}]({repo_url}), generated by "
        "`python -m scripts.notebooks reader`: the numbers in the text are the ones computed when the "
        "book was built. Run the cells to reproduce them.*"
    )


def reader_edition(path: pathlib.Path, *, citations: Citations, chapters: set[str], repo_url: str):
    """The reader edition of one executed chapter (a new notebook; the source is not changed)."""
    import nbformat

    nb = nbformat.read(path, as_version=4)
    ctx = Context(glued_values(nb), citations, path.parent, chapters, repo_url)
    new = copy.deepcopy(nb)
    for cell in new.cells:
        if cell.cell_type == "markdown":
            try:
                cell.source = convert_markdown(cell.source, ctx)
            except ReaderError as e:
                raise ReaderError(f"{path.name}: {e}") from None
            leftover = myst_leftover(cell.source)
            if leftover:
                raise ReaderError(f"{path.name}: MyST left in the reader edition: {leftover!r}")
        elif cell.cell_type == "code":
            cell.outputs = [o for o in cell.get("outputs", []) if not _is_glue_record(o)]
            fold_if_hidden(cell)
        cell.pop("id", None)
    cells = [nbformat.v4.new_markdown_cell(header_cell_source(path.stem, repo_url))]
    for cell in new.cells:  # a figure's caption goes right under it, as on the site
        cells.append(cell)
        caption = cell.metadata.get("mystnb", {}).get("figure", {}).get("caption")
        if cell.cell_type == "code" and caption:
            cells.append(nbformat.v4.new_markdown_cell(f"*Figure: {convert_markdown(caption, ctx)}*"))
    new.cells = cells
    for i, cell in enumerate(new.cells):  # ids from the position: deterministic
        cell["id"] = f"reader-{i:03d}"
    if not _has_widget_views(new):
        new.metadata.pop("widgets", None)
    return new


def _has_widget_views(nb) -> bool:
    return any("application/vnd.jupyter.widget-view+json" in o.get("data", {})
               for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []))


def write_all(paths: list[pathlib.Path], repo_url: str, chapters: set[str]) -> list[pathlib.Path]:
    """Write the reader edition of each of ``paths``; ``chapters``: the notebook names in _toc.yml."""
    import nbformat

    citations = Citations(ROOT / "references.bib")
    written = []
    for path in paths:
        nb = reader_edition(path, citations=citations, chapters=chapters, repo_url=repo_url)
        target = reader_path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(nb, target)
        written.append(target)
    return written


def reader_path(path: pathlib.Path) -> pathlib.Path:
    return READER_DIR / path.resolve().relative_to(ROOT)


__all__ = ["fold_if_hidden", "myst_leftover", "ReaderError", "reader_edition", "reader_path", "write_all"]
