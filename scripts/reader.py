"""Reader editions: each chapter as plain Jupyter notebook that reads the same as the site.

The chapters in ``book/`` are written for the static site: their markdown uses MyST roles and
directives (``{glue:text}``, ``{cite}``, ``{doc}``, ``{literalinclude}``, admonitions, dropdowns)
that only Sphinx renders. Colab, Binder, JupyterLab and the site's download button open the reader
edition instead (``reader/book/<chapter>.ipynb``), made from the executed source notebook by

    python scripts/notebooks.py reader            # every chapter in _toc.yml

In it every glued value is written into the prose as the site shows it, citations read
"(Vaswani et al., 2017)", ``{doc}`` links point at the sibling reader notebooks, included package
source is inlined as a code block, admonitions become block quotes and solutions ``<details>``.
Code cells and their outputs are kept (glue records, which Jupyter cannot display, are dropped).
The conversion is deterministic; ``tests/test_reader.py`` checks the committed editions are up to
date and that none contains MyST syntax Jupyter cannot render.
"""

from __future__ import annotations

import copy
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[1]
READER_DIR = ROOT / "reader"
GLUE_MIME = "application/papermill.record/"

ROLE = re.compile(r"\{(?P<role>[\w:-]+)\}`(?P<body>[^`]*)`")
FENCE_OPEN = re.compile(r"^(?P<fence>`{3,}|:{3,})\{(?P<name>[\w-]+)\}[ \t]*(?P<arg>.*)$")
# What Jupyter cannot render: any MyST role or directive, a (label)= target, a {{ substitution }}.
MYST_LEFTOVER = re.compile(r"\{[\w:-]+\}`|^\s*(`{3,}|:{3,})\s*\{[\w-]+\}|^\(.+\)=\s*$|\{\{.*?\}\}", re.M)

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


# --- directives --------------------------------------------------------------------------------------

def _options(lines: list[str]) -> tuple[dict[str, str], list[str]]:
    opts: dict[str, str] = {}
    i = 0
    while i < len(lines) and (m := re.match(r"^:([\w-]+):\s*(.*)$", lines[i])):
        opts[m.group(1)] = m.group(2).strip()
        i += 1
    return opts, lines[i:]


def literalinclude(arg: str, opts: dict[str, str], base: pathlib.Path) -> str:
    """The code a ``{literalinclude}`` shows, as a fenced block (Sphinx's own ``pyobject`` lookup)."""
    path = (base / arg).resolve()
    if not path.is_file():
        raise ReaderError(f"literalinclude: {arg} not found (from {base})")
    lines = path.read_text().splitlines()
    known = {"pyobject", "dedent", "language", "lines", "caption", "linenos", "emphasize-lines",
             "start-at", "start-after", "end-at", "end-before"}
    if set(opts) - known:
        raise ReaderError(f"literalinclude: options {sorted(set(opts) - known)} are not supported")
    if "pyobject" in opts:
        from sphinx.pycode import ModuleAnalyzer

        tags = ModuleAnalyzer.for_file(str(path), "").find_tags()
        if opts["pyobject"] not in tags:
            raise ReaderError(f"literalinclude: {opts['pyobject']} not found in {arg}")
        _, start, end = tags[opts["pyobject"]]
        lines = lines[start - 1 : end]  # as Sphinx does
    if "lines" in opts:
        picked = []
        for part in opts["lines"].split(","):
            a, _, b = part.partition("-")
            picked += lines[int(a) - 1 : int(b or a)]
        lines = picked
    for opt, after in (("start-at", False), ("start-after", True)):
        if opt in opts:
            i = next((n for n, ln in enumerate(lines) if opts[opt] in ln), None)
            if i is None:
                raise ReaderError(f"literalinclude: {opt} {opts[opt]!r} not found in {arg}")
            lines = lines[i + after :]
    for opt, keep in (("end-at", True), ("end-before", False)):
        if opt in opts:
            i = next((n for n, ln in enumerate(lines) if opts[opt] in ln), None)
            if i is None:
                raise ReaderError(f"literalinclude: {opt} {opts[opt]!r} not found in {arg}")
            lines = lines[: i + keep]
    while lines and not lines[-1].strip():
        lines.pop()
    if "dedent" in opts:
        n = int(opts["dedent"])
        lines = [ln[n:] if ln[:n].strip() == "" else ln.lstrip() for ln in lines]
    language = opts.get("language", "python")
    where = f"*From `{path.relative_to(ROOT)}`" + (f", `{opts['pyobject']}`" if "pyobject" in opts else "") + ":*\n\n"
    return where + f"```{language}\n" + "\n".join(lines) + "\n```"


def _directive(name: str, arg: str, body: list[str], ctx: "Context") -> str:
    opts, content = _options(body)
    inner = convert_markdown("\n".join(content), ctx).strip("\n")
    if name == "literalinclude":
        return literalinclude(arg, opts, ctx.base)
    if name in ADMONITIONS or name == "admonition":
        title = arg.strip() if name == "admonition" else (arg.strip() or ADMONITIONS[name])
        return "\n".join(["> **" + title + "**", ">"] + [("> " + ln).rstrip() for ln in inner.splitlines()])
    if name in {"dropdown", "toggle"}:
        title = arg.strip() or "Show"
        return f"<details>\n<summary>{title}</summary>\n\n{inner}\n\n</details>"
    if name in {"code-block", "code"}:
        return f"```{arg.strip()}\n" + "\n".join(content) + "\n```"
    if name == "math":
        return "$$\n" + "\n".join(content) + "\n$$"
    raise ReaderError(f"directive {{{name}}} has no reader-edition form; use one the converter knows")


# --- markdown ----------------------------------------------------------------------------------------

class Context:
    def __init__(self, values: dict[str, str], citations: Citations, base: pathlib.Path,
                 chapters: set[str], repo_url: str):
        self.values, self.citations, self.base = values, citations, base
        self.chapters, self.repo_url = chapters, repo_url


def _role(m: re.Match, ctx: Context) -> str:
    role, body = m.group("role"), m.group("body")
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
        text, target = body, body
        if m2 := re.match(r"^(.*?)\s*<(.+)>$", body):
            text, target = m2.group(1), m2.group(2)
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


def convert_markdown(text: str, ctx: Context) -> str:
    lines = text.split("\n")
    out: list[str] = []
    i = 0
    while i < len(lines):
        m = FENCE_OPEN.match(lines[i].strip()) if lines[i].lstrip() == lines[i] else None
        if not m:
            out.append(ROLE.sub(lambda r: _role(r, ctx), lines[i]))
            i += 1
            continue
        fence, depth = m.group("fence"), 0
        j = i + 1
        body: list[str] = []
        while j < len(lines):
            s = lines[j].strip()
            if FENCE_OPEN.match(s) and s.startswith(fence[0]) and len(re.match(r"^[`:]+", s).group()) == len(fence):
                depth += 1
            elif s == fence:
                if depth == 0:
                    break
                depth -= 1
            body.append(lines[j])
            j += 1
        else:
            raise ReaderError(f"unclosed {fence}{{{m.group('name')}}} directive")
        out.append(_directive(m.group("name"), m.group("arg"), body, ctx))
        i = j + 1
    return "\n".join(out)


# --- notebooks ---------------------------------------------------------------------------------------

def header_cell_source(stem: str, repo_url: str) -> str:
    return (
        f"*Reader edition of `book/{stem}.ipynb` from [{repo_url}]({repo_url}), generated by "
        "`python scripts/notebooks.py reader`: the numbers in the text are the ones computed when the "
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
            leftover = MYST_LEFTOVER.search(cell.source)
            if leftover:
                raise ReaderError(f"{path.name}: MyST left in the reader edition: {leftover.group()!r}")
        elif cell.cell_type == "code":
            cell.outputs = [o for o in cell.get("outputs", []) if not _is_glue_record(o)]
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


__all__ = ["MYST_LEFTOVER", "ReaderError", "reader_edition", "reader_path", "write_all"]
