"""The API reference (book/api.md and its pages, book/api/*.md) covers the package, and every public name is
documented with shapes."""

import importlib
import inspect
import pkgutil
import re
import typing

import pytest
import yaml


# A shape in a docstring: ``(B, L, D)``, ``(H,)``, ``(..., L, S)``, ``(max_len, d_model)``.
SHAPE = re.compile(r"``\(\)``|``\((?:\.\.\.|\w+)(?:,\s*(?:\.\.\.|[\w+*/ -]+))*,?\)``|\(\.\.\., L, S\)|\((?:B|L|H), ")


def _modules():
    """Every public module of the library and of the book's material (``attn.book`` and its modules)."""
    import attn.book

    names = [f"attn.{m.name}" for m in pkgutil.iter_modules(attn.__path__) if not m.name.startswith("_")]
    names += [f"attn.book.{m.name}" for m in pkgutil.iter_modules(attn.book.__path__) if not m.name.startswith("_")]
    return [importlib.import_module(n) for n in sorted(names)]


def _takes_or_gives_tensors(fn) -> bool:
    try:
        hints = typing.get_type_hints(fn)
    except Exception:
        hints = getattr(fn, "__annotations__", {})
    return any("Tensor" in str(h) for h in hints.values())


def _public(mod):
    for name in getattr(mod, "__all__", []):
        obj = getattr(mod, name)
        if inspect.isclass(obj) or inspect.isfunction(obj):
            yield name, obj


def test_every_module_declares_its_public_names():
    for mod in _modules():
        assert hasattr(mod, "__all__"), f"{mod.__name__} has no __all__: the API reference cannot tell what is public"


@pytest.mark.parametrize("mod", _modules(), ids=lambda m: m.__name__)
def test_every_public_name_has_a_docstring_and_tensor_apis_state_shapes(mod):
    missing, shapeless = [], []
    for name, obj in _public(mod):
        doc = inspect.getdoc(obj) or ""
        fns = [obj]
        if inspect.isclass(obj):
            forward = getattr(obj, "forward", None)
            doc += "\n" + (inspect.getdoc(forward) or "" if forward else "")
            fns = [f for f in (obj.__init__, forward) if f]
        if not doc.strip():
            missing.append(name)
        elif any(_takes_or_gives_tensors(f) for f in fns) and not SHAPE.search(doc):
            shapeless.append(name)
    assert missing == [], f"{mod.__name__}: no docstring for {missing}"
    assert shapeless == [], f"{mod.__name__}: takes or returns tensors but states no shape: {shapeless}"


def test_api_reference_pages_document_every_module_once(root):
    """The overview (book/api.md) links each of its pages (book/api/*.md, in _toc.yml under it) and
    documents nothing itself (one autodoc page of the whole package was ~28,500 elements: issue 34);
    across the pages every module of attn is documented exactly once."""
    overview = (root / "book/api.md").read_text()
    assert "automodule" not in overview, "book/api.md is the overview: its modules go on the pages under book/api/"
    pages = sorted((root / "book/api").glob("*.md"))
    assert len(pages) > 1
    documented = [m for p in pages for m in re.findall(r"automodule:: (attn(?:\.\w+)*)", p.read_text())]
    assert sorted(documented) == sorted(m.__name__ for m in _modules()), \
        "book/api/*.md must document every module of attn, each once"
    toc = yaml.safe_load((root / "_toc.yml").read_text())
    entry = next(c for part in toc["parts"] for c in part["chapters"] if c["file"] == "book/api")
    assert sorted(s["file"] for s in entry["sections"]) == sorted(f"book/api/{p.stem}" for p in pages)
    assert sorted(set(re.findall(r"\{doc\}`(api/\w+)`", overview))) == sorted(f"api/{p.stem}" for p in pages), \
        "book/api.md links each of its pages"
    assert "{doc}`api`" in (root / "book/intro.md").read_text(), "the intro links the API reference"
