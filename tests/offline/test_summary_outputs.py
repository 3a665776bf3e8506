"""Replay outputs for papers (issue #40): ``summary.json`` holds every number of ``summary.md``, every figure is PNG
and SVG, no interval comes from fewer than 5 repeats (the summary says why), and no two labels overlap."""

from __future__ import annotations

import json
import re
from itertools import combinations
from pathlib import Path

import pytest
from matplotlib.figure import Figure

from tests.offline.test_metrics import _synthetic
from tune_risk.cli import main
from tune_risk.offline.metrics import MIN_CI_REPEATS
from tune_risk.offline.summary import write_summary

FIGURES = ("regret_curves", "ranks_over_time", "k_histogram", "k_vs_mv", "performance_profile")
NUMBER = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?:e[+-]\d+)?(?![\w.])")
INTERVAL = re.compile(r"\[-?\d[^\]]*, -?\d[^\]]*\]")  # a printed "[low, high]"


@pytest.fixture(scope="module")
def tiny_replay(tmp_path_factory) -> Path:
    """A shipped table by name, two methods, 2 repeats, held-out seeds: every section of the summary."""
    out = tmp_path_factory.mktemp("tiny") / "out"
    assert main(["replay", "--table", "dqn_acrobot", "--methods", "erahbo,random-rep2", "--repeats", "2",
                 "--budget", "20", "--test-seeds", "10", "--out", str(out)]) == 0
    return out


def table_numbers(markdown: str) -> list[str]:
    """The numbers in the body rows of every markdown table (not the header rows)."""
    lines = markdown.splitlines()
    rows = [line for i, line in enumerate(lines) if line.startswith("|") and not line.startswith("|---")
            and not (i + 1 < len(lines) and lines[i + 1].startswith("|---"))]
    return [number for row in rows for number in NUMBER.findall(row)]


def json_numbers(data) -> list[float]:
    if isinstance(data, dict):
        return [n for value in data.values() for n in json_numbers(value)]
    if isinstance(data, list):
        return [n for value in data for n in json_numbers(value)]
    return [float(data)] if isinstance(data, int | float) and not isinstance(data, bool) else []


def renderings(value: float) -> set[str]:
    """Every way summary.md prints a number: significant digits, fixed decimals, integers, percentages."""
    out = {f"{value:.{digits}g}" for digits in (2, 3, 4, 5)} | {f"{value:.1f}", f"{value:.2f}", f"{100 * value:.0f}"}
    return out | ({str(int(value))} if value.is_integer() else set())


def test_summary_json_has_every_number_of_summary_md(tiny_replay):
    markdown = (tiny_replay / "summary.md").read_text(encoding="utf-8")
    data = json.loads((tiny_replay / "summary.json").read_text(encoding="utf-8"))
    assert {"run", "heldout", "ranks", "aggregate", "thresholds", "final_regret", "cost", "replicates"} <= set(data)
    printed = table_numbers(markdown)
    known = set().union(*(renderings(v) for v in json_numbers(data)))
    assert len(printed) > 50 and not [n for n in printed if n not in known]
    assert data["run"]["methods"] == ["erahbo", "random-rep2"] and data["run"]["tables"] == ["dqn_acrobot"]


def test_fewer_than_5_repeats_print_no_interval_and_say_why(tiny_replay):
    markdown = (tiny_replay / "summary.md").read_text(encoding="utf-8")
    data = json.loads((tiny_replay / "summary.json").read_text(encoding="utf-8"))
    assert not INTERVAL.search(markdown)
    assert f"a 95 % bootstrap CI needs ≥ {MIN_CI_REPEATS} repeats" in markdown
    assert f"no CI below {MIN_CI_REPEATS} repeats" in markdown
    lows = [r["ci_low"] for r in data["aggregate"] + data["final_regret"]["normalised_regret"]
            + data["heldout"]["normalised_heldout_mv_regret"]]
    assert lows and all(low is None for low in lows)


def test_five_repeats_print_intervals(tmp_path):
    write_summary(*_synthetic(2, ("erahbo", "gp-ucb"), MIN_CI_REPEATS), tmp_path, n_boot=100)
    assert INTERVAL.search((tmp_path / "summary.md").read_text(encoding="utf-8"))
    data = json.loads((tmp_path / "summary.json").read_text(encoding="utf-8"))
    assert all(r["ci_low"] <= r["iqm"] <= r["ci_high"] for r in data["final_regret"]["normalised_regret"])


def test_every_figure_is_png_and_svg_with_text_as_text(tiny_replay):
    for name in FIGURES:
        assert (tiny_replay / f"{name}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        svg = (tiny_replay / f"{name}.svg").read_text(encoding="utf-8")
        assert "<svg" in svg and "<text" in svg, name  # editable text, not glyph paths


def drawn_ticks(axis) -> list:
    """The tick labels of ``axis`` inside its view (the locator also places some just outside, not drawn)."""
    low, high = sorted(axis.get_view_interval())
    return [label for loc, label in zip(axis.get_ticklocs(), axis.get_ticklabels(), strict=True) if low <= loc <= high]


def text_boxes(fig: Figure) -> list:
    """(what, window extent) of the suptitle and every visible title, axis label and tick label."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    texts = [("figure text", t) for t in fig.texts]
    for i, ax in enumerate(a for a in fig.axes if a.get_visible()):
        texts += [(f"axes {i} {kind}", t) for kind, t in (("title", ax.title), ("xlabel", ax.xaxis.label),
                                                          ("ylabel", ax.yaxis.label))]
        texts += [(f"axes {i} tick {t.get_text()}", t) for axis in (ax.xaxis, ax.yaxis) for t in drawn_ticks(axis)]
    return [(what, t.get_window_extent(renderer)) for what, t in texts if t.get_visible() and t.get_text()]


def test_no_two_labels_overlap_and_all_lie_inside_the_figure(tmp_path, monkeypatch):
    saved = {}
    original = Figure.savefig
    monkeypatch.setattr(Figure, "savefig", lambda fig, path, **kw: (saved.__setitem__(Path(path).name, fig),
                                                                   original(fig, path, **kw)))
    write_summary(*_synthetic(4, ("erahbo", "rahbo-k20", "gp-ucb", "tune-risk"), 3, budget=300), tmp_path, n_boot=50)
    for name in FIGURES:
        fig = saved[f"{name}.png"]
        boxes = text_boxes(fig)
        outside = [what for what, box in boxes if box.x0 < 0 or box.y0 < 0 or box.x1 > fig.bbox.x1 + 0.5
                   or box.y1 > fig.bbox.y1 + 0.5]
        overlapping = [(a, b) for (a, box_a), (b, box_b) in combinations(boxes, 2) if box_a.overlaps(box_b)]
        assert not outside and not overlapping, (name, outside, overlapping[:5])
