"""The API reference's docstrings in Chinese (issue 35): the units of ``i18n/zh/docstrings/``.

    python -m scripts.zh docstrings        # add the units the last Chinese build lacked (English to replace)
    python -m scripts.zh docstrings check [MODULE ...]  # the problems of those files (all: scripts.zh check)

Each file ``i18n/zh/docstrings/<module>.md`` holds the docstrings of one module the reference documents,
a unit per object under ``<!-- doc NAME en:HASH -->`` (``_ext/attn_docstrings.py`` applies them to the
Chinese build and records what it showed, in ``attn-docstrings.json`` of the build's doctree folder, which
``skeleton`` reads: run ``make book`` or ``python -m scripts.site`` first).

``problems`` (part of ``python -m scripts.zh check``) needs no build: it finds each unit's object in the
package, and reports a unit whose English changed (stale), a unit still in English (untranslated), a unit
that names nothing the package documents, a translation whose structure differs from the English: its
section headers (``Shape:`` may read ``形状:``) and the names of the arguments it describes
(``invariant_differences``), and, read by docutils once napoleon has turned it into reST, its problems
(``rest_errors``) and its code spans: ``literals``, roles and their targets, maths (``rendered_code``).
"""

from __future__ import annotations

import importlib
import inspect
import json
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
FOLDER = ROOT / "i18n" / "zh" / "docstrings"
REPORT = ROOT / "_build" / "edition-zh" / "_build" / ".doctrees" / "attn-docstrings.json"
sys.path.insert(0, str(ROOT / "_ext"))
import attn_docstrings  # noqa: E402 (the book's Sphinx extension, from _ext/)

CJK = re.compile(r"[\u4e00-\u9fff]")
HEADER = ("<!-- The Chinese docstrings of {module}, as the API reference shows them (_ext/attn_docstrings.py).\n"
          "     Translate the text under each marker and keep the marker: its hash names the English docstring.\n"
          "     Keep reST as it is: ``literals``, :role:`targets`, maths, and the headers Args:, Returns:,\n"
          "     Raises:, Yields: (napoleon reads them; Shape: may read 形状:), each argument's name before its colon.\n"
          "     python -m scripts.zh check reports stale, untranslated and changed units. -->\n")
SECTION = re.compile(r"^\s*(Args|Arguments|Parameters|Returns|Return|Raises|Yields|Yield|Shape|Shapes|形状|Example|Examples"
                     r"|Note|Notes|Warning|Warnings|Attributes|See Also|References)\s*:\s*$", re.M)


def read(path: pathlib.Path) -> dict[str, tuple[str, str]]:
    return attn_docstrings.parse(path.read_text(encoding="utf-8"), str(path))


def module_of(name: str, modules: list[str]) -> str:
    """The documented module a name belongs to: the longest of ``modules`` it starts with."""
    return max((m for m in modules if name == m or name.startswith(m + ".")), key=len, default=name)


def skeleton() -> int:
    """Append to the module files the units the last Chinese build showed in English (missing ones)."""
    if not REPORT.exists():
        print(f"{REPORT.relative_to(ROOT)} is missing: build the site first (make book, or python -m scripts.site)")
        return 1
    seen = json.loads(REPORT.read_text(encoding="utf-8"))
    modules = [n for units in seen.values() for n, u in units.items() if u["what"] == "module"]
    added: dict[str, list[tuple[str, dict]]] = {}
    for units in seen.values():
        for name, unit in units.items():
            if unit["status"] == "missing":
                added.setdefault(module_of(name, modules), []).append((name, unit))
            elif unit["status"] == "stale":
                print(f"stale: {name} (its English changed; update the Chinese and the marker's hash to {unit['en']})")
    FOLDER.mkdir(parents=True, exist_ok=True)
    for module, units in added.items():
        path = FOLDER / f"{module}.md"
        text = path.read_text(encoding="utf-8") if path.exists() else HEADER.format(module=module)
        text += "".join(f"\n<!-- doc {name} en:{unit['en']} -->\n{unit['english'].strip()}\n" for name, unit in units)
        path.write_text(text, encoding="utf-8")
        print(f"{path.relative_to(ROOT)}: {len(units)} units added")
    return 0


# --- the English, found in the package (no build) ------------------------------------------------------

def english_docstring(name: str) -> str | None:
    """The docstring autodoc shows for ``name`` ("attn.masks.causal", "attn.book.viz.Table.show", a
    documented constant), or None where the package has no such documented object."""
    from sphinx.pycode import ModuleAnalyzer, PycodeError

    parts = name.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            module = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        rest = parts[cut:]
        parent = sys.modules.get(".".join(parts[:cut - 1])) if cut > 1 else None
        if parent is not None and getattr(parent, parts[cut - 1], module) is not module:
            continue  # a package's name for something else (attn.book.widgets.model_state, a function)
        if rest:  # a constant or attribute documented with #: or a string after it
            try:
                docs = ModuleAnalyzer.for_module(module.__name__).find_attr_docs()
            except PycodeError:
                docs = {}
            key = (".".join(rest[:-1]), rest[-1])
            if key in docs:
                return "\n".join(docs[key])
        obj = module
        for attr in rest:
            owner, obj = obj, inspect.getattr_static(obj, attr, None) if inspect.isclass(obj) else getattr(obj, attr, None)
            if obj is None:
                return None
            if isinstance(obj, (staticmethod, classmethod)):
                obj = obj.__func__
            elif inspect.isclass(owner) and not isinstance(obj, property) and not inspect.isroutine(obj):
                return None
        doc = inspect.getdoc(obj.fget if isinstance(obj, property) else obj)
        if doc is None and rest and inspect.isclass(owner):  # autodoc's inherited docstring
            doc = inspect.getdoc(getattr(owner, rest[-1]))
        return doc
    return None


# --- checks ---------------------------------------------------------------------------------------------

def invariants(text: str) -> dict[str, list[str]]:
    """What a translation must keep of a docstring's structure, each as a sorted list: napoleon's section
    headers and the names of the arguments described (its code spans: ``rendered_code``)."""
    sections = ["Shape" if s in ("Shapes", "形状") else s for s in SECTION.findall(text)]
    body = _section_body(text, ("Args", "Arguments", "Parameters"))
    args = re.findall(r"^[ \t]+(\*{0,2}[A-Za-z_][A-Za-z0-9_]*)(?: \([^)]*\))?[ \t]*[:：]", body, re.M)
    return {"sections": sorted(sections), "arguments": sorted(args)}


def _section_body(text: str, names: tuple[str, ...]) -> str:
    """The lines under the first header among ``names`` (up to the next header)."""
    found = list(SECTION.finditer(text))
    for m, nxt in zip(found, [*found[1:], None], strict=False):
        if m.group(1) in names:
            return text[m.end(): nxt.start() if nxt else len(text)]
    return ""


def invariant_differences(english: str, chinese: str) -> list[str]:
    en, zh = invariants(english), invariants(chinese)
    return [f"{k}: English {en[k]} but Chinese {zh[k]}" for k in en if en[k] != zh[k]]


def _doctree(text: str):
    """A docstring as docutils reads it once napoleon has turned it into reST; Sphinx's own roles read
    as plain literals here (the build itself checks their targets)."""
    import docutils.core
    from docutils import nodes
    from docutils.parsers.rst import roles
    from sphinx.ext.napoleon import Config
    from sphinx.ext.napoleon.docstring import GoogleDocstring

    for role in set(re.findall(r":((?:[a-z]+:)?[a-z]+):`", text)):
        roles.register_generic_role(role, nodes.literal)
    rst = str(GoogleDocstring(text.split("\n"), Config(napoleon_custom_sections=["Shape", "Shapes", "Example", "形状"])))
    settings = {"report_level": 2, "halt_level": 5, "warning_stream": False, "file_insertion_enabled": False}
    return docutils.core.publish_doctree(rst, settings_overrides=settings)


def rest_errors(text: str) -> list[str]:
    """The reST problems (docutils' warnings and errors) of a docstring as napoleon hands it to Sphinx."""
    from docutils import nodes

    doctree = _doctree(text)
    return [m.astext().replace("\n", " ")[:200] for m in doctree.findall(nodes.system_message) if m["level"] >= 2]


def rendered_code(text: str) -> list[str]:
    """The literals, roles and maths docutils finds in a docstring, as a sorted list: a ``literal`` that
    touches a Chinese character (``x``的, 查询``q``) is not markup to docutils, and reads as backticks."""
    from docutils import nodes

    found = [n.astext() for n in _doctree(text).findall(lambda n: isinstance(n, (nodes.literal, nodes.math,
                                                                                      nodes.math_block)))]
    return sorted(found)


def problems(modules: list[str] | None = None) -> dict[str, list[str]]:
    """kind -> "NAME: what" for every unit of the docstring files (stale, untranslated, unknown, changed),
    or of the files of ``modules`` ("attn.masks")."""
    found: dict[str, list[str]] = {}
    for path in sorted(FOLDER.glob("*.md")):
        if modules and path.stem not in modules:
            continue
        for name, (want, chinese) in read(path).items():
            english = english_docstring(name)
            if english is None:
                found.setdefault("unknown", []).append(f"{name}: no such documented object ({path.name})")
            elif attn_docstrings.english_hash(english) != want:
                found.setdefault("stale", []).append(f"{name}: its English changed ({path.name})")
            elif not CJK.search(chinese) and len(re.findall(r"[A-Za-z]{3,}", english)) >= 3:
                found.setdefault("untranslated", []).append(f"{name} ({path.name})")
            else:
                found.setdefault("changed", []).extend(f"{name}: {d}" for d in invariant_differences(english, chinese))
                found.setdefault("rest", []).extend(f"{name}: {e}" for e in rest_errors(chinese))
                en, zh = rendered_code(english), rendered_code(chinese)
                if en != zh:
                    found.setdefault("rest", []).append(
                        f"{name}: docutils reads other code spans than the English's: lost {sorted(set(en) - set(zh))[:3]}, "
                        f"new {sorted(set(zh) - set(en))[:3]} (markup must touch a space or punctuation such as ，。）: "
                        "write `` ``x``\\ （`` or ``的 ``x`` 的``)")
    return {k: v for k, v in found.items() if v}


def main(argv: list[str]) -> int:
    if argv and argv[0] == "check":
        found = problems(argv[1:])
        for kind, items in found.items():
            print("\n".join(f"{kind}: {item}" for item in items))
        return 1 if found else 0
    if argv:
        print(__doc__)
        return 2
    return skeleton()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
