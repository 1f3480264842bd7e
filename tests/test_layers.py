"""The two parts of the package, apart: the library (``attn``) never imports the book's material
(``attn.book``), ``import attn`` loads none of it, no module is organised by where its code came
from, and the names the book's material had before 0.2 still work, with a warning, for one release."""

import ast
import importlib
import json
import pathlib
import re
import subprocess
import sys
import warnings

import pytest

import attn
import attn.book
from attn import _moved

ROOT = pathlib.Path(__file__).resolve().parents[1]
SRC = ROOT / "src"
#: The one library module that names the book: as text, for the old names it forwards (see its docstring).
FORWARDS_OLD_NAMES = "attn._moved"


def _module_name(path: pathlib.Path) -> str:
    name = path.relative_to(SRC).with_suffix("").as_posix().replace("/", ".")
    return name.removesuffix(".__init__")


def _library() -> list[tuple[str, pathlib.Path]]:
    return [(_module_name(p), p) for p in sorted((SRC / "attn").rglob("*.py"))
            if not _module_name(p).startswith("attn.book")]


def imported_names(module: str, tree: ast.Module, is_package: bool = False) -> list[str]:
    """Every module ``module``'s code imports, as absolute dotted names: ``import x.y``, ``from x
    import y`` (both ``x`` and ``x.y``, as ``y`` may be a submodule), relative imports resolved, and
    ``importlib.import_module("...")`` / ``__import__("...")`` with a literal name."""
    package = module if is_package else module.rpartition(".")[0]
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                parent = ".".join(parts[: len(parts) - node.level + 1])
                base = f"{parent}.{base}" if base else parent
            found.append(base)
            found += [f"{base}.{a.name}" for a in node.names]
        elif (isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant)
              and isinstance(node.args[0].value, str)
              and ast.unparse(node.func) in ("importlib.import_module", "import_module", "__import__")):
            found.append(node.args[0].value)
    return found


def book_imports(module: str, tree: ast.Module, is_package: bool = False) -> list[str]:
    """The imports of ``attn.book`` (or anything in it) in ``module``."""
    return [f"{module}: {name}" for name in imported_names(module, tree, is_package)
            if name == "attn.book" or name.startswith("attn.book.")]


@pytest.mark.parametrize("code, module, package, expected", [
    ("from attn.book import viz", "attn.masks", False, ["attn.book", "attn.book.viz"]),
    ("import attn.book.viz as v", "attn.masks", False, ["attn.book.viz"]),
    ("from attn import book", "attn.masks", False, ["attn.book"]),
    ("from .book import data", "attn.masks", False, ["attn.book", "attn.book.data"]),
    ("from . import book", "attn", True, ["attn.book"]),
    ("from . import book", "attn.efficient", True, []),  # attn.efficient.book: another module
    ("from ..book.viz import heatmap", "attn.efficient.tiled", False, ["attn.book.viz", "attn.book.viz.heatmap"]),
    ("def f():\n    import importlib\n    return importlib.import_module('attn.book.widgets')", "attn.x", False,
     ["attn.book.widgets"]),
    ("from attn import masks, bookkeeping\nimport attn.book_keeper", "attn.x", False, []),
])
def test_the_rule_catches_every_way_of_importing_the_book(code, module, package, expected):
    """The check itself: one import the other way, in any form, is found (and a lookalike is not)."""
    found = book_imports(module, ast.parse(code), package)
    assert [f.split(": ")[1] for f in found] == expected


def test_the_library_never_imports_the_book():
    found = []
    for module, path in _library():
        if module != FORWARDS_OLD_NAMES:
            found += book_imports(module, ast.parse(path.read_text()), path.name == "__init__.py")
    assert found == [], "the library must not import attn.book: move the code, or pass it in from the book"


def test_the_old_names_module_imports_the_book_only_when_an_old_name_is_asked_for():
    """``attn._moved`` holds the old names as text and imports nothing of the book by itself."""
    path = SRC / "attn" / "_moved.py"
    tree = ast.parse(path.read_text())
    assert book_imports(FORWARDS_OLD_NAMES, tree) == []
    top = [n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))]
    assert all(not any(a.name.startswith("attn") for a in n.names) for n in top if isinstance(n, ast.Import))
    assert all(not (n.module or "").startswith("attn") for n in top if isinstance(n, ast.ImportFrom))


def _fresh(code: str) -> str:
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         env={"PYTHONPATH": str(SRC), "PATH": "/usr/bin:/bin"})
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_import_attn_loads_no_module_of_the_book():
    loaded = json.loads(_fresh("import json, sys\nimport attn\n"
                               "print(json.dumps(sorted(m for m in sys.modules if m.startswith('attn'))))"))
    assert [m for m in loaded if m.startswith("attn.book")] == [], loaded
    # what it does load: the library's layers, not the views, the measuring tools or the checks
    assert set(loaded) == {"attn", "attn._checks", "attn._moved", "attn._versions", "attn.attention", "attn.blocks",
                           "attn.efficient", "attn.efficient.hashing", "attn.efficient.layers", "attn.efficient.linear", "attn.efficient.memory",
                           "attn.efficient.recurrence", "attn.efficient.sparse", "attn.efficient.tiled",
                           "attn.functional", "attn.generation", "attn.masks", "attn.models", "attn.positional",
                           "attn.variants"}, loaded


def test_every_module_of_the_book_is_listed_and_loads_on_first_use():
    on_disk = {_module_name(p).split(".")[2] for p in (SRC / "attn" / "book").glob("*.py") if p.name != "__init__.py"}
    on_disk |= {p.name for p in (SRC / "attn" / "book").iterdir() if (p / "__init__.py").exists()}
    assert set(attn.book.MODULES) == on_disk
    out = _fresh("import sys\nfrom attn import book\nprint('matplotlib' in sys.modules)\n"
                 "book.viz.heatmap\nprint('matplotlib' in sys.modules, 'attn.book.viz' in sys.modules)")
    assert out.split() == ["False", "True", "True"], "from attn import book loads nothing until a module is used"


def test_no_module_is_organised_by_where_its_code_came_from():
    """No "moved from the X chapter" sections and no ``__all__ +=`` halfway down a module: code is
    grouped by what it does."""
    found = []
    for path in sorted((SRC / "attn").rglob("*.py")):
        text = path.read_text()
        rel = path.relative_to(SRC)
        found += [f"{rel}: {m.group(0)!r}" for m in re.finditer(r"(?im)^#.*\bmoved from\b.*$", text)]
        found += [f"{rel}: __all__ +=" for _ in re.finditer(r"(?m)^__all__ \+=", text)]
    assert found == []


# --- the old names, for one release ------------------------------------------------------------------

def _old_names():
    for old, new in _moved.MODULES.items():
        yield old, None, new
    for old, names in _moved.NAMES.items():
        for name, new in names.items():
            yield old, name, new


def test_every_old_name_points_at_something_that_exists():
    for _old, name, new in _old_names():
        module = importlib.import_module(new)
        if name is not None:
            assert hasattr(module, name), f"{new} has no {name}"


@pytest.mark.parametrize("statement, check", [
    ("import attn.viz as m", lambda g: g["m"] is importlib.import_module("attn.book.viz")),
    ("from attn.widgets import MaskExplorer", lambda g: g["MaskExplorer"].__module__ == "attn.book.widgets.mask_explorer"),
    ("import attn.widgets.mask_explorer as m", lambda g: g["m"] is importlib.import_module("attn.book.widgets.mask_explorer")),
    ("from attn.teaching import worked_example", lambda g: g["worked_example"]()["tokens"] == ["the", "cat", "sat"]),
    ("import attn; f = attn.teaching.token_loss", lambda g: g["f"] is attn.book.train.token_loss),
    ("from attn.measure import layer_times", lambda g: g["layer_times"] is attn.book.why_attention.layer_times),
    ("from attn.generation import stepwise_logits", lambda g: g["stepwise_logits"].__module__ == "attn.book.causal_attention"),
    ("import attn; r = attn.efficient.measured('kv_cache')", lambda g: g["r"][0]["new_tokens"] > 0),
    ("from attn.efficient.dispatch import sdpa_path", lambda g: g["sdpa_path"] is attn.measure.sdpa_path),
    ("from attn.efficient.results import measured", lambda g: g["measured"] is attn.book.results.measured),
    ("from attn.variants import comparison_markdown", lambda g: "| BERT |" in g["comparison_markdown"]()),
])
def test_an_old_name_still_works_and_warns_where_it_is_used(statement, check):
    import attn.book.train  # noqa: F401  (the objects to compare with)
    import attn.book.why_attention  # noqa: F401
    import attn.measure  # noqa: F401

    for old in [m for m in sys.modules if m in _moved.MODULES or m.startswith(("attn.viz", "attn.widgets", "attn.teaching"))
                or m.startswith("attn.efficient.results") or m == "attn.efficient.dispatch"]:
        del sys.modules[old]  # a fresh import each time: the warning is given on import
    for name in ("viz", "widgets", "teaching", "data"):
        attn.__dict__.pop(name, None)
    attn.efficient.__dict__.pop("results", None)
    attn.efficient.__dict__.pop("dispatch", None)
    scope = {}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        exec(compile(statement, "reader_code.py", "exec"), scope)
    moved = [w for w in caught if issubclass(w.category, DeprecationWarning) and "has moved to attn." in str(w.message)]
    assert moved, f"no DeprecationWarning for {statement!r}"
    assert all(w.filename == "reader_code.py" for w in moved), [(w.filename, str(w.message)) for w in moved]
    assert all(f"stops working in attn {_moved.REMOVED_IN}" in str(w.message) for w in moved)
    assert check(scope)


def test_the_moved_module_keeps_its_own_identity():
    """Imported under its old name, a module is the same object, and keeps its own name and spec."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        old = importlib.import_module("attn.diagram")
    assert old is importlib.import_module("attn.book.diagram")
    assert old.__name__ == old.__spec__.name == "attn.book.diagram"


def test_unknown_names_are_still_errors():
    with pytest.raises(AttributeError, match="module 'attn.teaching' has no attribute 'nope'"):
        importlib.import_module("attn.teaching").nope  # noqa: B018
    with pytest.raises(AttributeError, match="module 'attn.measure' has no attribute 'nope'"):
        attn.measure.nope  # noqa: B018
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("attn.nope")
    sys.modules.pop("attn.viz", None)
    attn.__dict__.pop("viz", None)
    with pytest.raises(ImportError), pytest.warns(DeprecationWarning, match="attn.viz has moved to attn.book.viz"):
        exec("from attn.viz import nope")


OLD_PATTERN = re.compile(
    r"(?<![\w.])attn\.(viz|diagram|widgets|pretraining|data|train|exercises|bugs|source_listing|notebook|teaching)\b"
    r"|from attn import [\w, ]*\b(viz|diagram|widgets|pretraining|data|train|exercises|bugs|source_listing|notebook|teaching)\b"
    r"|attn\.efficient\.(measured|delayed_copy|sdpa_cases|sdpa_path|results|dispatch)\b"
    r"|attn\.measure\.(layer_times|autograd_depth|gradient_by_distance|layers_to_reach|decoder_step_flops)\b"
    r"|attn\.generation\.(greedy_with_step_mask|stepwise_logits)\b|attn\.variants\.comparison_markdown")


def test_nothing_in_the_repository_uses_an_old_name():
    """The chapters, their Chinese edition, the tests, scripts, benchmarks and the site's extension
    use the new names. Only this file and attn._moved list the old ones, and a line that says they
    still work names the releases (0.2, 0.3)."""
    files = [*ROOT.glob("book/*.ipynb"), *ROOT.glob("book/*.md"), *ROOT.glob("i18n/zh/**/*.md"),
             *ROOT.glob("tests/*.py"), *ROOT.glob("scripts/*.py"), *ROOT.glob("benchmarks/*.py"),
             *ROOT.glob("_ext/*.py"), *(SRC / "attn").rglob("*.py"), ROOT / "README.md"]
    skip = {pathlib.Path(__file__).resolve(), SRC / "attn" / "_moved.py"}
    found = [f"{p.relative_to(ROOT)}: {m.group(0)}" for p in files if p.resolve() not in skip
             for line in p.read_text(encoding="utf-8").splitlines() if not re.search(r"\b0\.[23]\b", line)
             for m in OLD_PATTERN.finditer(line)]
    assert found == []
