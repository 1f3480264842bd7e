"""The idea figure of "Debugging attention": which check catches which bug, each mark a finding of a
report that diagnose.check computed."""

import matplotlib
import pytest
import torch

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.text import Text  # noqa: E402

from attn import diagnose  # noqa: E402
from attn.book import bugs  # noqa: E402
from attn.book.diagram.debugging_attention import CAUGHT, NOT_RUN, PASSED, check_grid  # noqa: E402


def _texts(fig) -> list[str]:
    return [t.get_text() for t in fig.findobj(Text) if t.get_text()]


@pytest.fixture(scope="module")
def reports():
    picked = {"missing 1/sqrt(d_k)", "off-by-one causal mask", "head split without transpose"}
    memory = torch.randn(1, 6, 32, generator=torch.Generator().manual_seed(0))
    return {name: diagnose.check(m, d_model=w, is_causal=c, positions=True)
            for name, _, m, w, c in bugs.zoo(memory) if name in picked}


def test_each_cell_is_the_finding_of_that_bugs_report(reports):
    fig = check_grid(reports)
    checks = list(dict.fromkeys(f.name for r in sorted(reports.values(), key=lambda r: -len(r.findings))
                                for f in r.findings))
    cells = {p.get_gid(): p for p in fig.axes[0].patches if (p.get_gid() or "").startswith("cell-")}
    assert len(cells) == len(reports) * len(checks)
    colour = {False: CAUGHT, True: PASSED, None: NOT_RUN}
    for i, report in enumerate(reports.values()):
        passed = {f.name: f.passed for f in report.findings}
        for j, check in enumerate(checks):
            expected = matplotlib.colors.to_rgba(colour[passed.get(check)])
            assert cells[f"cell-{i}-{j}"].get_facecolor() == pytest.approx(expected), (i, check)
    plt.close(fig)


def test_bugs_checks_and_counts_are_written(reports):
    fig = check_grid(reports)
    texts = _texts(fig)
    for name in reports:
        assert name in texts
    for check in ("scaling", "causality", "reach", "padding"):
        assert check in texts
    caught = sum("scaling" in r.failed for r in reports.values())
    assert caught == 1 and texts.count("✗") == sum(len(r.failed) for r in reports.values())
    assert "bugs caught" in texts
    plt.close(fig)


def test_a_check_the_reports_did_not_run_draws_a_dash_in_the_not_run_colour(reports):
    fig = check_grid(reports, checks=["causality", "scaling"])
    cells = {p.get_gid(): p for p in fig.axes[0].patches if (p.get_gid() or "").startswith("cell-")}
    row = list(reports).index("missing 1/sqrt(d_k)")  # not causal: causality did not run
    assert cells[f"cell-{row}-0"].get_facecolor() == pytest.approx(matplotlib.colors.to_rgba(NOT_RUN))
    assert cells[f"cell-{row}-1"].get_facecolor() == pytest.approx(matplotlib.colors.to_rgba(CAUGHT))
    plt.close(fig)


def test_bad_input_is_named(reports):
    with pytest.raises(ValueError, match="reports"):
        check_grid({})
    with pytest.raises(TypeError, match="reports\\['x'\\]"):
        check_grid({"x": ["scaling"]})
    with pytest.raises(ValueError, match="checks .*no such check"):
        check_grid(reports, checks=["no such check"])
