"""Every chapter runs as a Colab reader runs it: a fresh environment with only `attn` (+ ipykernel).

Slow (a new virtual environment, then every chapter's reader edition top to bottom), so it runs
with `--fresh-env`: `make test` runs it right after `pytest --nbval`. scripts/fresh_env.py does
the work and can be run on its own, e.g. for one chapter.
"""

import shutil
import time

import pytest

import fresh_env  # scripts/fresh_env.py
import notebooks  # scripts/notebooks.py

pytestmark = pytest.mark.fresh_env


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    work = tmp_path_factory.mktemp("fresh")
    start = time.perf_counter()
    py = fresh_env.create(work, notebooks.chapters())
    print(f"\nfresh environment created in {time.perf_counter() - start:.0f} s")
    yield work, py
    shutil.rmtree(work, ignore_errors=True)


def test_installed_package_is_a_real_install_with_its_widget_assets_and_no_book_packages(env):
    work, py = env
    info = fresh_env.check_install(py, work)
    assert info["problems"] == []
    assert any(a.endswith(".js") for a in info["assets"]) and any(a.endswith(".css") for a in info["assets"])


def test_every_chapter_in_the_toc_runs_top_to_bottom_with_only_attn_installed(env):
    work, py = env
    chapters = notebooks.chapters()
    results = fresh_env.execute(chapters, py, work)
    assert set(results) == {p.name for p in chapters}
    for name, r in sorted(results.items()):
        print(f"{name:36s} {r['seconds']:6.1f} s {'ok' if r['ok'] else 'FAILED'}")
    failed = {name: r["log"] for name, r in results.items() if not r["ok"]}
    assert not failed, "\n\n".join(f"== {n}\n{log}" for n, log in failed.items())
