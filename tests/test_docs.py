"""``make docs`` builds the site strictly (mkdocs-material + mkdocstrings): no warning, no broken link, and the
benchmark pages show the committed result files, not hand-copied numbers."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]


def mkdocs_build(config: Path, site: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(config), "-d", str(site)],
                          cwd=config.parent, capture_output=True, text=True, timeout=600, env=env)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("mkdocstrings_handlers.python")
    out = tmp_path_factory.mktemp("site")
    done = mkdocs_build(ROOT / "mkdocs.yml", out)
    assert done.returncode == 0, done.stderr[-3000:]
    return out


def page(site: Path, name: str) -> str:
    return (site / name / "index.html").read_text(encoding="utf-8")


def test_benchmark_pages_render_the_committed_result_files(site: Path) -> None:
    headline = (ROOT / "experiments/results/peers_replay/b300/headline.md").read_text(encoding="utf-8")
    row = next(line for line in headline.splitlines() if line.startswith("| tune-risk |"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    html = page(site, "benchmarks/peers")
    rendered = re.findall(r"<td[^>]*>([^<]*)</td>", html)
    assert any(rendered[i:i + len(cells)] == cells for i in range(len(rendered)))  # the committed row, verbatim
    assert "Rendered from <code>experiments/results/peers_replay/b300/headline.md</code>" in html
    live = page(site, "benchmarks/live")
    assert 'src="../../results/experiments/results/live_hpo/peers_ppo_cartpole.png"' in live
    assert (site / "results/experiments/results/live_hpo/peers_ppo_cartpole.png").is_file()
    start = page(site, "getting-started")  # a program's plain output, fenced verbatim, then its provenance
    assert any("Direct replays, 5 repeats per table" in block for block in start.split("<pre")[1:])
    assert "Rendered from <code>experiments/results/demo.md</code>" in start


def test_api_reference_and_math_are_rendered(site: Path) -> None:
    tune = page(site, "reference/tune")
    assert 'id="tune_risk.tune.searcher.RiskAwareSearch"' in tune
    assert 'id="tune_risk.tune.load.load_results"' in tune
    offline = page(site, "reference/offline")
    assert "stratified" in offline and 'id="tune_risk.offline.metrics.aggregate_iqm"' in offline
    # an ``Example:`` section is rendered as a code block, not as Markdown text
    assert '<span class="gp">&gt;&gt;&gt; </span><span class="n">paths</span>' in offline
    assert 'id="rl_tasks.pool.WorkerPool"' in page(site, "reference/rl_tasks")
    assert page(site, "algorithms").count('class="arithmatex"') > 100


@pytest.mark.parametrize("marker", ["include: experiments/no_such_study/headline.md",
                                    "provenance: experiments/no_such_study/headline.md"])
def test_a_page_quoting_a_missing_result_file_fails_the_build(tmp_path: Path, marker: str) -> None:
    pytest.importorskip("mkdocs")
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "index.md").write_text(f"# Study\n\n<!-- {marker} -->\n", encoding="utf-8")
    config = tmp_path / "mkdocs.yml"
    config.write_text(f"site_name: t\nhooks:\n  - {ROOT / 'docs' / 'hooks.py'}\n", encoding="utf-8")
    done = mkdocs_build(config, tmp_path / "site")
    assert done.returncode != 0
    assert "experiments/no_such_study/headline.md does not exist" in done.stderr


def test_readme_is_a_landing_page_whose_numbers_are_the_committed_ones() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(readme) <= 200
    assert any(line.startswith("pip install") for line in readme[:40])
    headline = (ROOT / "experiments/results/peers_replay/b300/headline.md").read_text(encoding="utf-8")
    committed = {line.split("|")[1].strip(): line for line in headline.splitlines() if line.startswith("| ")}
    shown = [line for line in readme if line.startswith("| ") and line.split("|")[1].strip() in committed
             and "method" not in line]
    assert len(shown) >= 5, "the README's results table is missing"
    for line in shown:  # every row the README shows is the committed row, byte for byte
        assert line == committed[line.split("|")[1].strip()]
