"""MkDocs hooks: the benchmark pages render their numbers from the committed result files.

A page writes ``<!-- include: experiments/results/peers_replay/b300/headline.md -->`` (optionally
``shift=N``: headings moved N levels down, default 1; ``fence=text``: verbatim in a code block) and the build
puts that file's text there, followed by the line that says which commit last changed it and when (``git log``); ``<!-- provenance: PATH -->`` writes
the line alone. A missing file fails the build, so a page cannot quote a result the repository does not hold.
Images the included files show (``![..](x.png)`` beside them) are copied into the site under ``results/``.
Hand-written tables would drift from the files the study scripts write; these hooks are why they cannot.
"""

from __future__ import annotations

import posixpath
import re
import subprocess
from functools import cache
from pathlib import Path

from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parents[1]
RESULT_DIRS = ("experiments",)
_INCLUDE = re.compile(r"<!--\s*include:\s*(\S+)(?:\s+shift=(\d))?(?:\s+fence=(\w+))?\s*-->")
_PROVENANCE = re.compile(r"<!--\s*provenance:\s*(\S+)\s*-->")
_IMAGE = re.compile(r"!\[([^\]]*)\]\((?!https?:|/)([^)\s]+)\)")
_HEADING = re.compile(r"^(#{1,5}) ", re.MULTILINE)


@cache
def provenance(path: str) -> str:
    """``"`path`, committed in `abc1234` on 2026-12-07"`` from git, with a note if the file differs from it."""
    def git(*args: str) -> str:
        done = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=False)
        return done.stdout.strip() if done.returncode == 0 else ""

    last = git("log", "-1", "--format=%h %cs", "--", path)
    if not last:
        return f"`{path}` (not in this checkout's git history)"
    commit, date = last.split()
    dirty = " (with uncommitted changes)" if git("status", "--porcelain", "--", path) else ""
    return f"`{path}`, committed in `{commit}` on {date}{dirty}"


def _source(path: str) -> Path:
    source = ROOT / path
    if not source.is_file():
        raise PluginError(f"docs include: {path} does not exist (a page may only show committed results)")
    return source


def render_include(path: str, shift: int, page_uri: str, fence: str | None = None) -> str:
    """The text of ``path`` for the page at ``page_uri``: headings shifted, images re-pointed, provenance.

    ``fence``: show the file verbatim in a code block of that language (a program's plain-text output)."""
    text = _source(path).read_text(encoding="utf-8")
    if fence:
        return f"```{fence}\n{text.strip()}\n```\n\n*Rendered from {provenance(path)}.*\n"
    text = _HEADING.sub(lambda m: "#" * min(6, len(m.group(1)) + shift) + " ", text)
    folder = posixpath.dirname(path)
    page_dir = posixpath.dirname(page_uri)

    def image(match: re.Match[str]) -> str:
        target = posixpath.normpath(posixpath.join("results", folder, match.group(2)))
        return f"![{match.group(1)}]({posixpath.relpath(target, page_dir or '.')})"

    text = _IMAGE.sub(image, text)
    return f"{text.rstrip()}\n\n*Rendered from {provenance(path)}.*\n"


def render_provenance(path: str) -> str:
    """The provenance line of ``path`` alone (the file must exist, as for an include)."""
    _source(path)
    return f"*Numbers from {provenance(path)}.*"


def on_page_markdown(markdown: str, page, config, files) -> str:  # noqa: ANN001 (mkdocs' hook signature)
    """Replace the include and provenance markers of a page."""
    uri = page.file.src_uri
    markdown = _INCLUDE.sub(lambda m: render_include(m.group(1), int(m.group(2) or 1), uri, m.group(3)), markdown)
    return _PROVENANCE.sub(lambda m: render_provenance(m.group(1)), markdown)


def on_files(files: Files, config) -> Files:  # noqa: ANN001
    """Copy the committed result figures into the site, under ``results/<their path>``."""
    for folder in RESULT_DIRS:
        for image in sorted((ROOT / folder).rglob("*")):
            if image.suffix in {".png", ".svg"} and image.is_file():
                uri = posixpath.join("results", image.relative_to(ROOT).as_posix())
                files.append(File.generated(config, uri, abs_src_path=str(image)))
    return files
