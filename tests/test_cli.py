"""The ``tune-risk`` command's behaviour shared by every subcommand (issue #37): ``python -m tune_risk``,
"did you mean" for mistyped flags, subcommands and choices at every level, every option's default in
``--help``, and the extra to install when an optional dependency is missing (no ``ImportError`` traceback).
"""

from __future__ import annotations

import argparse
import subprocess
import sys

import pytest

from tune_risk.cli import build_parser, main

GENERATE = ["generate", "--algo", "ppo", "--env", "cartpole", "--out", "x.parquet"]
REPLAY = ["replay", "--table", "t.parquet", "--out", "o"]


@pytest.mark.parametrize(("argv", "prog", "hint"), [
    (["replya"], "tune-risk", "invalid choice: 'replya' (choose from 'replay', 'generate', 'prewarm'); did you mean "
                              "'replay'?"),
    ([*REPLAY, "--budjet", "10"], "tune-risk replay", "unrecognized arguments: --budjet 10; did you mean --budget?"),
    ([*GENERATE, "--confgs", "3"], "tune-risk generate", "unrecognized arguments: --confgs 3; did you mean --configs?"),
    (["--verbsoe", *GENERATE], "tune-risk generate", "did you mean --verbose?"),  # a flag of the top level
    ([*REPLAY, "--budjet=3", "--repats", "2"], "tune-risk replay", "did you mean --budget for --budjet, --repeats for "
                                                                   "--repats?"),
    (["generate", "--algo", "ppx", "--env", "cartpole", "--out", "x"], "tune-risk generate",
     "argument --algo: invalid choice: 'ppx' (choose from 'ppo', 'dqn', 'sac'); did you mean 'ppo'?"),
    ([*REPLAY, "--via", "tnue"], "tune-risk replay", "did you mean 'tune'?"),
])
def test_a_mistyped_flag_subcommand_or_choice_gets_did_you_mean(argv, prog, hint, capsys):
    with pytest.raises(SystemExit) as exited:
        main(argv)
    err = capsys.readouterr().err
    assert exited.value.code == 2 and err.count("\n") == 1, err
    assert err.startswith(f"{prog}: error: ") and hint in err, err


def test_an_unknown_argument_without_a_close_flag_gets_no_guess(capsys):
    with pytest.raises(SystemExit):
        main([*GENERATE, "--zzzzzz"])
    assert "did you mean" not in capsys.readouterr().err


def test_every_subcommand_help_shows_its_options_defaults():
    parser = build_parser()
    subcommands = parser.subcommands.choices
    assert {"replay", "generate", "prewarm"} <= set(subcommands)
    for name, subparser in subcommands.items():
        text = " ".join(subparser.format_help().split())
        for action in subparser._actions:  # noqa: SLF001 - argparse keeps no public list of its options
            if (not action.option_strings or action.default in (None, [], argparse.SUPPRESS)
                    or action.nargs == 0):
                continue
            help_text = " ".join((action.help or "").split())
            start = text.index(help_text[:40]) if help_text else text.index(action.option_strings[-1])
            assert "default" in text[start:start + len(help_text) + 40], (name, action.option_strings, help_text)
    generate = " ".join(subcommands["generate"].format_help().split())
    assert "configurations (default: 128)" in generate and "(default: 50)" in generate


def test_python_dash_m_tune_risk_is_the_command():
    proc = subprocess.run([sys.executable, "-m", "tune_risk", "--help"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and proc.stdout.startswith("usage: tune-risk") and "generate" in proc.stdout
    proc = subprocess.run([sys.executable, "-m", "tune_risk", "replya"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "did you mean 'replay'?" in proc.stderr


BLOCKED = """
import sys

class NotInstalled:
    '''The rl extra's packages, as if they were not installed.'''

    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("jax", "jaxlib", "gymnax", "brax", "rejax"):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, NotInstalled())
from tune_risk.cli import main
sys.exit(main(sys.argv[1:]))
"""


@pytest.mark.parametrize("command", [
    [*GENERATE, "--configs", "2", "--seeds", "2"],
    ["prewarm", "--algo", "ppo", "--env", "cartpole", "--steps", "100", "--eval-every", "50", "--cache", "c"],
])
def test_a_missing_extra_is_named_with_its_install_command(command, tmp_path):
    proc = subprocess.run([sys.executable, "-c", BLOCKED, *command], capture_output=True, text=True, timeout=300,
                          cwd=tmp_path)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert proc.stderr.count("\n") == 1, proc.stderr
    assert f"tune-risk {command[0]}: error: this command needs the 'rl' extra" in proc.stderr
    assert "pip install 'tune-risk[rl]'" in proc.stderr
    assert not (tmp_path / "x.parquet").exists()
