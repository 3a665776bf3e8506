"""Run a study command and commit-ready record what it printed: ``experiments/results/<name>.md``.

Usage::

    python experiments/record.py cluster_projection -- python experiments/benchmarks/cluster_projection.py --budget 200

The record opens with the command, the date, the commit it ran at and the machine (CPU model, cores, the
cores the process may use), then holds the command's standard output verbatim (its tables are Markdown), so a
documentation page can include the file instead of copying its numbers by hand. The record is written only
if the command succeeds (an interrupted study leaves the previous record in place); standard error passes
through to the terminal.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import shlex
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "experiments" / "results"


def machine() -> str:
    """``"x86_64, <CPU model>, 2 cores (this process on cores 1)"``: what the timings of a record depend on."""
    model = platform.processor() or ""
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.is_file():
        names = [line.split(":", 1)[1].strip() for line in cpuinfo.read_text().splitlines()
                 if line.startswith("model name")]
        model = names[0] if names else model
    allowed = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
    on = f" (this process on cores {','.join(map(str, allowed))})" if allowed else ""
    return f"{platform.machine()}, {model or 'unknown CPU'}, {os.cpu_count()} cores{on}"


def commit() -> str:
    done = subprocess.run(["git", "describe", "--always", "--dirty"], cwd=ROOT, capture_output=True, text=True)
    return done.stdout.strip() if done.returncode == 0 else "not a git checkout"


def header(command: list[str]) -> str:
    shown = " ".join(shlex.quote(part) for part in command).replace(sys.executable, "python")
    return (f"Recorded by `python experiments/record.py`: command `{shown}`, "
            f"{dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC, commit `{commit()}`, machine {machine()}.\n\n")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("name", help="the record's name: experiments/results/<name>.md")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- then the command to run")
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("give the command after --")
    if not args.name.replace("_", "").replace("-", "").isalnum():
        parser.error(f"name: {args.name!r} must be letters, digits, '-' and '_' only")
    started = header(command)
    done = subprocess.run(command, cwd=ROOT, stdout=subprocess.PIPE, text=True)
    if done.returncode != 0:
        sys.stdout.write(done.stdout)
        raise SystemExit(f"record.py: the command failed (exit code {done.returncode}); nothing recorded")
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / f"{args.name}.md"
    tmp = out.with_suffix(".md.tmp")
    tmp.write_text(started + done.stdout, encoding="utf-8")
    tmp.replace(out)
    print(f"recorded {out.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
