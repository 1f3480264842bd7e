"""The API reference (book/api.md) covers the package, and every public name is documented with shapes."""

import importlib
import inspect
import pkgutil
import re
import typing

import pytest


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


def test_api_reference_page_documents_every_module(root):
    page = (root / "book/api.md").read_text()
    documented = set(re.findall(r"automodule:: (attn(?:\.\w+)+)", page))
    assert documented == {m.__name__ for m in _modules()}, "book/api.md must list every module of attn"
    assert "book/api" in (root / "_toc.yml").read_text()
    assert "{doc}`api`" in (root / "book/intro.md").read_text(), "the intro links the API reference"
