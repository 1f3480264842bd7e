"""Every chapter runs as a Colab reader runs it: a fresh environment with only `attn` (+ ipykernel).

With `--fresh-env` (make test passes it) tests/conftest.py creates the environment before anything
else (scripts/fresh_env.py does the work; seconds, from uv's cache), and with `--nbval` nbval runs
every chapter in it, comparing each stored output: the chapters run once, in a reader's install.
These tests check the install itself and that the kernel nbval uses is that install's.
"""

import json
import os
import pathlib

import pytest

from scripts import fresh_env
from scripts import notebooks

pytestmark = pytest.mark.fresh_env


@pytest.fixture(scope="module")
def env():
    """(folder, interpreter) of the run's fresh environment (tests/conftest.py made it)."""
    work = pathlib.Path(os.environ["ATTN_FRESH_ENV"])
    return work, work / "venv" / "bin" / "python"


def test_installed_package_is_a_real_install_with_its_data_files_and_no_book_packages(env):
    work, py = env
    info = fresh_env.check_install(py, work)
    assert info["problems"] == []
    widgets = info["data"]["widgets"]
    assert any(a.endswith(".js") for a in widgets) and any(a.endswith(".css") for a in widgets)
    assert "kv_cache.csv" in info["data"]["measured"] and "long_range.json" in info["data"]["measured"]  # benchmarks/measured/
    assert {"gpt.pt", "gpt.json"} <= set(info["data"]["checkpoints"]) and info["data"]["texts"] == ["english.txt.gz"]


PROBE = (
    "import importlib.util, json, os, sys, attn\n"
    "print(json.dumps({'prefix': sys.prefix, 'attn': attn.__file__, 'records': os.environ.get('ATTN_GLUE_RECORDS'),"
    " 'build_packages': [m for m in ('myst_nb', 'sphinx', 'jupyter_book', 'nbval') if importlib.util.find_spec(m)]}))"
)


def test_the_kernel_nbval_starts_is_the_fresh_environment(env):
    """The kernel named attn-fresh, found as nbval finds it (JUPYTER_PATH of this run), runs the fresh
    interpreter with the installed attn, no book-build package, and glue records switched on."""
    from jupyter_client.manager import start_new_kernel

    work, py = env
    km, kc = start_new_kernel(kernel_name=fresh_env.KERNEL_NAME)
    try:
        out = []
        kc.execute_interactive(PROBE, output_hook=lambda m: out.append(m["content"].get("text", "")), timeout=120)
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
    info = json.loads("".join(out).strip().splitlines()[-1])
    assert pathlib.Path(info["prefix"]).resolve() == (work / "venv").resolve()
    assert "site-packages" in info["attn"] and info["attn"].startswith(info["prefix"])
    assert info["build_packages"] == [] and info["records"] == "1"


def test_every_chapter_in_the_toc_runs_top_to_bottom_with_only_attn_installed(env, request):
    """Under `--nbval` with every chapter collected, nbval runs them in the fresh kernel (each cell is
    its own test there); otherwise (e.g. `pytest --fresh-env tests/test_fresh_env.py`) the reader
    editions run here, top to bottom (`pytest --nbval-lax`)."""
    work, py = env
    chapters = notebooks.chapters()
    collected = {pathlib.Path(str(item.path)).name for item in request.session.items}
    if request.config.getoption("--nbval", False) and {p.name for p in chapters} <= collected:
        assert request.config.option.nbval_kernel_name == fresh_env.KERNEL_NAME
        assert not request.config.option.nbval_current_env
        return
    result = fresh_env.run_chapters(chapters, py, work / "lax", compare=False)
    print(f"{len(chapters)} chapters in {result['seconds']:.0f} s: {'ok' if result['ok'] else 'FAILED'}")
    assert result["ok"], "\n\n".join(f"== {n}\n{d}" for n, d in result["cells"].items()) or result["log"]
