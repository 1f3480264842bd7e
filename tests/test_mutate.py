"""scripts/mutate.py: mutation testing of the library's core, each module against its own quick tests,
configured through mutmut's own [tool.mutmut] table (README, "make mutate")."""

import json
import tomllib

from scripts import mutate


def test_the_core_is_the_librarys_lower_layers_and_each_has_its_tests(root):
    assert list(mutate.CORE) == ["functional", "masks", "attention", "positional", "generation", "tiled"]
    for file, tests in mutate.CORE.values():
        assert (root / "src" / "attn" / file).is_file(), file
        assert "book" not in file, "the book's material is not the library's core"
        assert tests and all((root / t).is_file() for t in tests), tests


def test_each_module_gets_a_mutmut_configuration_that_mutates_it_alone_with_its_quick_tests(tmp_path, monkeypatch):
    monkeypatch.setattr(mutate, "WORK", tmp_path)
    work = mutate.prepare("masks")
    config = tomllib.loads((work / "pyproject.toml").read_text())["tool"]["mutmut"]
    assert config["only_mutate"] == ["src/attn/masks.py"]
    assert config["pytest_add_cli_args_test_selection"] == ["tests/test_masks.py", "-m", "not slow"]
    assert (work / "src").resolve() == (mutate.ROOT / "src").resolve()  # links, not copies
    assert (work / "tests").resolve() == (mutate.ROOT / "tests").resolve()
    assert mutate.summary("masks") == {} and mutate.survivors("masks") == []  # nothing run yet
    assert json.loads(json.dumps(mutate.CORE))  # plain data: the README and the report quote it
