"""The helpers behind `make test-cpus`, `make test-newest` and the uv installs (scripts/nbval_runs.py, uv_args.py,
fresh_env.py)."""

import json

from scripts import nbval_runs
from scripts import notebooks
from scripts import uv_args


def _nb(tmp_path, *sources, kind="code"):
    path = tmp_path / "x.ipynb"
    path.write_text(json.dumps({"cells": [{"cell_type": kind, "source": s} for s in sources]}))
    return path


def test_a_chapter_owns_its_thread_count_only_with_a_code_cell_that_sets_it(tmp_path):
    assert nbval_runs.own_threads(_nb(tmp_path, "import torch\n", "torch.set_num_threads(1)  # steady\n"))
    assert not nbval_runs.own_threads(_nb(tmp_path, "import torch\n"))
    assert not nbval_runs.own_threads(_nb(tmp_path, "Try `torch.set_num_threads(2)`.", kind="markdown"))
    assert not nbval_runs.own_threads(_nb(tmp_path, "# torch.set_num_threads(1)\n"))


def test_the_configurations_are_avx2_no_simd_and_another_thread_count_for_the_chapters_that_need_it():
    chapters = notebooks.chapters()
    configs = {name: (env, paths) for name, env, paths in nbval_runs.configurations(chapters, native=False)}
    avx2, no_simd = configs["avx2"][0], configs["default"][0]
    assert (avx2["ATEN_CPU_CAPABILITY"], avx2["MKL_ENABLE_INSTRUCTIONS"], avx2["DNNL_MAX_CPU_ISA"]) == ("avx2", "AVX2", "AVX2")
    assert no_simd["ATEN_CPU_CAPABILITY"] == "default" and "MKL_ENABLE_INSTRUCTIONS" not in no_simd
    assert configs["avx2"][1] == configs["default"][1] == chapters
    assert "MPLBACKEND" not in avx2  # the inline backend shows figures, whose text/plain nbval compares
    (threads,) = [name for name in configs if name.startswith("threads=")]
    assert configs[threads][1] == [p for p in chapters if not nbval_runs.own_threads(p)]
    assert configs[threads][0]["OMP_NUM_THREADS"] == threads.split("=")[1]
    assert "native" not in configs  # make test runs it


def test_the_difference_keeps_the_reason_and_drops_the_cell_source_and_colours():
    report = ("\x1b[91mNotebook cell execution failed\x1b[0m\n\x1b[94mCell 5: Cell outputs differ\nInput:\n"
              "\x1b[0mprint(x)\n\x1b[94mTraceback:\x1b[0m\n mismatch 'stdout'\n  - 5.9\n  + 6.0\n")
    assert nbval_runs.difference(report) == " mismatch 'stdout'\n  - 5.9\n  + 6.0"


def test_pip_index_settings_become_uv_options(monkeypatch):
    class Proc:
        stdout = ("global.extra-index-url='file:///a/simple file:///b/simple'\n:env:.find-links='/opt/wheels'\n"
                  "global.find-links='/opt/wheels'\nglobal.constraint='/etc/c.txt'\nglobal.cert='/x.pem'\n")
    monkeypatch.setattr(uv_args.subprocess, "run", lambda *_a, **_k: Proc)
    assert uv_args.pip_index_args() == [
        "--extra-index-url", "file:///a/simple", "--extra-index-url", "file:///b/simple",
        "--find-links", "/opt/wheels", "--constraint", "/etc/c.txt", "--index-strategy", "unsafe-best-match"]
    Proc.stdout = ":env:.extra-index-url=''\n"
    assert uv_args.pip_index_args() == []


def test_runs_outside_make_test_use_the_sanitizers_of_make_test(root):
    """test-cpus and test-newest replace pytest's addopts; they must keep the same sanitize file."""
    import tomllib

    addopts = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]["addopts"]
    assert f"--nbval-sanitize-with {nbval_runs.SANITIZE.as_posix()}" in addopts
    assert (root / nbval_runs.SANITIZE).is_file()


def test_the_install_check_covers_every_data_folder_the_package_declares(root):
    """scripts/fresh_env.py checks that a reader's install carries each folder of data files that
    pyproject.toml's package-data names, and benchmarks/measured/ (setup.py copies it in)."""
    import tomllib

    from scripts import fresh_env

    data = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]["attn.book"]
    assert {pattern.split("/")[0] for pattern in data} | {"measured"} == set(fresh_env.DATA)
    for folder in fresh_env.DATA.values():
        files = fresh_env.data_files(folder)
        assert files and not any(f.endswith(".py") for f in files), folder
