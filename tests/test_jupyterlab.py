"""The explorers live in JupyterLab: a real server on 127.0.0.1, the chapter run in the browser.

This is the `make lab` experience: JupyterLab from the project environment opens the explorers
chapter (its reader edition), runs every cell with a live kernel, and each explorer renders and
responds to a control, with no error in the page and no request to another host.
"""

import json
import os
import pathlib
import shutil
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

from scripts import reader

TOKEN = "attn-book-test-token"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def lab(root, tmp_path_factory, browser):  # noqa: ARG001 (browser: skips Lab where Chromium is absent)
    work = tmp_path_factory.mktemp("lab")
    shutil.copy2(reader.reader_path(root / "book/explorers.ipynb"), work / "explorers.ipynb")
    port = _free_port()
    env = dict(os.environ, JUPYTERLAB_SETTINGS_DIR=str(work / ".settings"),
               JUPYTERLAB_WORKSPACES_DIR=str(work / ".workspaces"), ATTN_QUIET="1")
    # without the fresh environment's kernels that nbval uses (tests/conftest.py sets JUPYTER_PATH):
    # with them in view, Lab started no kernel for the chapter (seen in make test)
    env.pop("JUPYTER_PATH", None)
    jupyter = pathlib.Path(sys.executable).parent / "jupyter"
    log = (work / "lab.log").open("w")
    proc = subprocess.Popen(
        [str(jupyter), "lab", "--no-browser", "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={port}",
         "--ServerApp.port_retries=0", f"--IdentityProvider.token={TOKEN}", f"--ServerApp.root_dir={work}",
         "--LabApp.news_url=", "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
         "--LabApp.extension_manager=readonly", *(["--allow-root"] if os.geteuid() == 0 else [])],
        env=env, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    deadline = time.time() + 90
    while True:
        try:
            urllib.request.urlopen(f"{base}/api/status?token={TOKEN}", timeout=2)
            break
        except OSError:
            if proc.poll() is not None or time.time() > deadline:
                proc.kill()
                pytest.fail("JupyterLab did not start:\n" + (work / "lab.log").read_text()[-3000:])
            time.sleep(0.5)
    yield base
    proc.terminate()
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()


def test_explorers_render_and_respond_live_in_jupyterlab(root, lab, browser):
    """The explorers chapter run in Lab: the replaying explorers respond, the live ones compute typed
    numbers in the page (equal to attn) and their edits reach the kernel's traits."""
    import torch
    from conftest import PageWatch

    import attn

    w = PageWatch(browser, lab)
    page = w.page
    page.set_default_timeout(60_000)
    page.goto(f"{lab}/lab/tree/explorers.ipynb?token={TOKEN}")
    page.wait_for_selector(".jp-Notebook .jp-Cell", state="attached")
    page.wait_for_selector("#jp-main-statusbar >> text=Idle", timeout=90_000)
    page.locator(".lm-MenuBar-itemLabel", has_text="Run").first.click()
    page.locator(".lm-Menu-itemLabel", has_text="Run All Cells").first.click()

    mask = page.locator(".attn-mask-explorer").first
    page.wait_for_selector(".attn-mask-explorer .attn-mask-grid [data-allowed]", timeout=120_000)
    kind = mask.get_attribute("data-kind")
    other = "sliding_window" if kind != "sliding_window" else "causal"
    mask.locator("select[name=kind]").select_option(other)
    assert mask.get_attribute("data-kind") == other

    page.wait_for_selector(".attn-head-view line.attn-line", state="attached", timeout=120_000)
    view = page.locator(".attn-head-view").first
    heads = view.get_attribute("data-heads")
    view.locator("button[name=head][value='1']").click()
    assert view.get_attribute("data-heads") != heads

    page.wait_for_selector(".attn-pe-explorer circle.attn-pe-point", state="attached", timeout=120_000)
    pe = page.locator(".attn-pe-explorer").first
    pe.locator("input[name=position]").evaluate(
        "el => { el.value = 5; el.dispatchEvent(new Event('input', {bubbles: true}));"
        " el.dispatchEvent(new Event('change', {bubbles: true})); }")
    assert pe.get_attribute("data-position") == "5"

    # The live explorers compute in the page (the module the site uses), and edits reach the kernel.
    page.wait_for_selector(".attn-worked span[data-name=out]", state="attached", timeout=120_000)
    page.wait_for_selector(".attn-online .attn-step", state="attached", timeout=120_000)
    page.fill(".attn-worked input[name=X][data-i='1'][data-j='2']", "-1.5")
    page.locator(".attn-worked input[name=is_causal]").check()
    X = attn.book.examples.worked_example()["X"]
    X[1, 2] = -1.5
    ref = attn.book.widgets.WorkedExampleExplorer(X, is_causal=True).result()["out"]
    cells = page.eval_on_selector_all(".attn-worked span[data-name=out]",
                                      "cs => cs.map(c => [+c.dataset.i, +c.dataset.j, +c.dataset.value])")
    shown = torch.zeros_like(ref)
    for i, j, v in cells:
        shown[i, j] = v
    torch.testing.assert_close(shown, ref, atol=1e-6, rtol=0)
    step = page.locator(".attn-online .attn-step")
    first = int(step.get_attribute("data-step"))
    page.locator(".attn-online button[name=next]").click()
    assert int(step.get_attribute("data-step")) == first + 1

    # The trained GPT reads what is typed: every layer's and head's weights and the prediction, as PyTorch.
    page.wait_for_selector(".attn-gen-live canvas.attn-gen-map", state="attached", timeout=120_000)
    gen = page.locator(".attn-gen-explorer").first
    gen.locator("input[name=prompt]").fill("keys ")
    maps = gen.locator("canvas.attn-gen-map")
    assert gen.locator(".attn-gen-live").get_attribute("data-length") == "5" and maps.count() == 8
    reading = attn.book.widgets.GenerationExplorer("keys ", 20).reading()
    row = torch.tensor([float(x) for x in maps.last.get_attribute("data-weights").split(",")], dtype=torch.float64)
    torch.testing.assert_close(row, reading["weights"][1, 3, 4].double(), atol=1e-5, rtol=0)  # layer 2, head 4, last query
    assert gen.locator(".attn-gen-top li").count() == 5

    page.wait_for_selector("#jp-main-statusbar >> text=Idle", timeout=120_000)
    page.locator(".jp-Cell").last.click()  # a new cell at the end reads the kernel's traits
    page.keyboard.press("Escape")
    page.keyboard.press("b")
    page.keyboard.press("Enter")
    page.keyboard.type("worked.X[1][2], worked.is_causal, tiled.step")
    page.keyboard.press("Shift+Enter")
    page.wait_for_selector(f".jp-OutputArea-output >> text=(-1.5, True, {first + 1})", timeout=60_000)

    page.wait_for_selector("#jp-main-statusbar >> text=Idle", timeout=120_000)
    # Errors shown on purpose are in cells tagged raises-exception; any other error output fails.
    nb = json.loads((root / "book/explorers.ipynb").read_text())
    expected = sum("raises-exception" in c["metadata"].get("tags", []) for c in nb["cells"])
    shown = page.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']")
    assert shown.count() == expected, shown.all_inner_texts()
    assert w.errors == [], w.errors
    assert w.offhost == [], w.offhost
    w.close()
