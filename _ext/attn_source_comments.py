"""The comments and docstrings of the package's source, in the Chinese edition (issue 35): the chapters show
parts of ``src/attn`` with ``{literalinclude}``, and the Chinese pages show the same code with its docstrings
in Chinese where the API reference has them (``i18n/zh/docstrings/``, _ext/attn_docstrings.py, found by the
hash of the English) and its comments in Chinese, from one table, ``i18n/zh/source_comments.yml`` (English comment -> Chinese), which the Chinese
edition's configuration names (``attn_source_comments``, written by ``python -m scripts.zh build``).

Only comments change, found by Python's tokenizer (a ``#`` inside a string is code); the code itself
stays the package's, byte for byte. A run of whole-line comments at one indentation is one entry, its
lines joined by spaces (a Chinese entry may break its lines with newlines); an end-of-line comment is
its own entry. A comment the table does not have stays as it is (tests/test_zh_english.py finds them).
"""

from __future__ import annotations

import io
import pathlib
import tokenize

from attn_docstrings import english_hash
from attn_docstrings import load as load_docstrings


def comments(code: str) -> list[tuple[list[int], int, str, bool]]:
    """The comments of ``code``: (their 0-based line numbers, column, English text, whole-line) per entry;
    [] when the code does not tokenize."""
    try:
        tokens = [t for t in tokenize.generate_tokens(io.StringIO(code).readline) if t.type == tokenize.COMMENT]
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return []
    lines = code.split("\n")
    out: list[tuple[list[int], int, str, bool]] = []
    for t in tokens:
        row, col = t.start[0] - 1, t.start[1]
        text = t.string.lstrip("#").strip()
        whole = not lines[row][:col].strip()
        last = out[-1] if out else None
        if whole and last and last[3] and last[1] == col and last[0][-1] == row - 1:
            last[0].append(row)
            out[-1] = (last[0], col, f"{last[2]} {text}", True)
        else:
            out.append(([row], col, text, whole))
    return out


def translate_comments(code: str, table: dict[str, str]) -> str:
    """``code`` with each comment the table has in its translation."""
    found = comments(code)
    if not found:
        return code
    lines = code.split("\n")
    new: dict[int, list[str]] = {}  # a line's number -> the lines that replace it
    for rows, col, text, whole in found:
        if text not in table:
            continue
        zh = str(table[text]).strip().split("\n")
        if whole:
            new[rows[0]] = [lines[rows[0]][:col] + "# " + z.strip() for z in zh]
            for r in rows[1:]:
                new[r] = []
        else:
            new[rows[0]] = [lines[rows[0]][:col] + "# " + " ".join(z.strip() for z in zh)]
    return "\n".join(x for i, line in enumerate(lines) for x in new.get(i, [line]))


def translate_docstrings(code: str, table: dict[str, str]) -> str:
    """``code`` with each docstring whose English the table has (by its hash, ``attn_docstrings.english_hash``
    of the cleaned docstring) in its translation, indented and quoted as the English one; [] of a fragment
    that does not parse leaves it as it is."""
    import ast
    import inspect
    import textwrap

    lines = code.split("\n")
    body = textwrap.dedent(code)
    shift = len(lines[0]) - len(body.split("\n")[0])  # the indentation dedent removed
    try:
        tree = ast.parse(body)
    except SyntaxError:
        return code
    new: dict[int, list[str]] = {}  # first line -> its replacement; the docstring's other lines -> []
    for node in ast.walk(tree):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) or not node.body:
            continue
        first = node.body[0]
        if not (isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str)):
            continue
        chinese = table.get(english_hash(inspect.cleandoc(first.value.value)))
        start, end = first.lineno - 1, first.end_lineno - 1
        opening = lines[start][first.col_offset + shift:]
        if chinese is None or not opening.startswith('"""') or not lines[end].rstrip().endswith('"""'):
            continue
        indent = lines[start][: first.col_offset + shift]
        text = chinese.strip().split("\n")
        block = [f'{indent}"""{text[0]}', *(f"{indent}{t}" if t.strip() else "" for t in text[1:])]
        block[-1] += '"""' if len(text) == 1 else f'\n{indent}"""'
        new[start] = "\n".join(block).split("\n")
        new.update({r: [] for r in range(start + 1, end + 1)})
    return "\n".join(x for i, line in enumerate(lines) for x in new.get(i, [line]))


def load(path: pathlib.Path) -> dict[str, str]:
    import yaml

    return {str(k): str(v) for k, v in (yaml.safe_load(path.read_text(encoding="utf-8")) or {}).items()}


def translate_included_source(app, doctree) -> None:
    """doctree-read: the literal blocks read from a Python file ({literalinclude}), their comments translated."""
    from docutils import nodes

    name = app.config.attn_source_comments
    if not name:
        return
    table = load(pathlib.Path(app.confdir, name))
    docstrings = {}  # the hash of an English docstring -> its Chinese (_ext/attn_docstrings.py's units)
    if app.config.attn_docstrings:
        docstrings = {h: zh for h, zh in load_docstrings(pathlib.Path(app.confdir, app.config.attn_docstrings)).values()}
    for node in doctree.findall(nodes.literal_block):
        if not str(node.get("source", "")).endswith(".py"):
            continue
        code = node.astext()
        new = translate_docstrings(translate_comments(code, table), docstrings)
        if new != code:
            node.rawsource = new  # equal to the text: still highlighted as code (not a parsed-literal block)
            node.children = [nodes.Text(new)]


def setup(app):
    app.add_config_value("attn_source_comments", None, "env")
    app.connect("doctree-read", translate_included_source)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
