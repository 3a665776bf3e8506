"""``tune-risk replay``'s engine flags, derived from :class:`tune_risk.settings.EngineSettings`.

Every field of ``EngineSettings`` becomes a flag (``k_max`` -> ``--k-max``) with its type, its valid
values (``FIELD_CHOICES``) and the first sentence of its entry in the class docstring as help, except
the fields the replay protocol or another flag sets (:data:`NOT_FLAGS`, with the reason). So a knob
added to the engine reaches the command line without a hand-kept list. A flag left out keeps each
method's preset; a given flag applies to every method, except what a method's name fixes.

Torch-free: the CLI validates these flags before any heavy import.
"""

from __future__ import annotations

import argparse
import dataclasses
import inspect
import re
from typing import Any

from tune_risk.settings import FIELD_CHOICES, EngineSettings

NOT_FLAGS: dict[str, str] = {
    "method": "--methods",
    "beta_stop_schedule": "the method name (erahbo-exp, erahbo-sigmoid)",
    "budget": "--budget",
    "budget_unit": "the replay protocol (incorporated BO replicates, A-16)",
    "charge_initial": "the replay protocol (the initial design is not charged, A-16)",
    "common_random_numbers": "the replay protocol (seed permutations shared by all methods)",
    "warp": "--warp",
    "seed": "--seed (plus the repeat)",
    "max_active_configs": "runs.csv, which follows proposal order with one active configuration",
    "num_restarts": "the continuous acquisition only; a replay searches the table's rows",
    "raw_samples": "the continuous acquisition only; a replay searches the table's rows",
}
"""EngineSettings fields without a flag, and what sets them instead."""

NOTES: dict[str, str] = {
    "alpha": "gp-ucb keeps alpha = 0",
    "k_min": "erahbo methods only: rahbo-k<k> and gp-ucb fix k",
    "k_max": "erahbo methods only: rahbo-k<k> and gp-ucb (k = 20) fix k",
    "schedule_param": "erahbo-exp and erahbo-sigmoid only",
    "intensify": "must be smaller than --budget",
}
"""Where a flag does not apply to every method (what the method names fix wins)."""

OWN_HELP: dict[str, str] = {
    "k_min": "fewest replicates per configuration (a variance needs two)",
    "k_max": "most replicates per configuration",
    "schedule_param": "parameter of the beta_stop schedule: gamma of erahbo-exp, s of erahbo-sigmoid",
    "mean_noise": "noise model of the mean GP (docs/algorithms.md A-4)",
    "var_noise": "noise model of the variance GP (docs/algorithms.md A-6)",
    "var_posterior": "variance GP posterior mean as is (gp) or clamped at 0 (nonnegative; docs/algorithms.md A-20)",
    "launch_policy": "how a round launches its replicates: doubling waves (§2.3), a sliding window of "
                     "--window replicates in flight, or all k_max at once",
    "window": "replicates in flight with --launch-policy window",
    "oscbo_lambda_init": "the OSCBO game's dual start lambda_1 (--lengthscale oscbo or oscbo-l1)",
    "oscbo_omega": "the OSCBO game's OMD step size (--lengthscale oscbo or oscbo-l1)",
    "oscbo_form": "role of the initial design in the OSCBO objective S5: prefix (conditioning only) or "
                  "literal (--lengthscale oscbo or oscbo-l1)",
}
"""Help of the fields that the class docstring documents together with others (else its first sentence)."""

NONE_DEFAULTS: dict[str, str] = {
    "k_init": "each method's k_max",
    "rho_bar_sq": "implied by the warp, 0.25",
    "schedule_param": "gamma = 50 for erahbo-exp, s = 10 for erahbo-sigmoid",
    "oscbo_lambda_init": "balanced on the initial design's noise",
}
"""What a ``None`` default means, for the help text."""

_ENTRY = re.compile(r"^    ([a-z_]+(?:(?:, | / )[a-z_]+)*): (.*)$")
_SENTENCE_END = re.compile(r"(?<=[a-z0-9)\]]\.)\s+(?=[A-Z][a-z]|\d+\.\d)")  # not inside "App. C.5" or "eq. 5"


def engine_fields() -> list[dataclasses.Field]:
    """The ``EngineSettings`` fields that are flags, in declaration order."""
    return [f for f in dataclasses.fields(EngineSettings) if f.name not in NOT_FLAGS]


def flag_name(field_name: str) -> str:
    """``k_max`` -> ``--k-max``."""
    return "--" + field_name.replace("_", "-")


def attribute_help() -> dict[str, str]:
    """Help of each field: the first sentence of its entry in the ``EngineSettings`` docstring, without
    RST markup, or :data:`OWN_HELP` where the docstring documents several fields together."""
    doc = inspect.getdoc(EngineSettings) or ""
    entries: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in doc.split("Attributes", 1)[-1].splitlines()[1:]:
        match = _ENTRY.match(line)
        if match:
            current = [match.group(2)]
            for name in re.split(r", | / ", match.group(1)):
                entries[name] = current  # "k_min, k_max: ..." documents both
        elif current is not None and line.startswith("        "):
            current.append(line.strip())
    docs = {name: _first_sentence(" ".join(parts)) for name, parts in entries.items()}
    return {**docs, **OWN_HELP}


def _first_sentence(text: str) -> str:
    text = re.sub(r"``([^`]*)``", r"\1", text)  # RST literals read fine as plain text in a terminal
    return _SENTENCE_END.split(text, maxsplit=1)[0].rstrip(".;")


def add_engine_arguments(parser: argparse.ArgumentParser) -> None:
    """Add one flag per :func:`engine_fields` entry (default ``None``: each method's preset)."""
    group = parser.add_argument_group(
        "engine settings", "EngineSettings fields (tune_risk/settings.py). A flag left out keeps each method's\n"
        "preset; a given one applies to every method, except where the method's name fixes it.")
    docs = attribute_help()
    defaults = EngineSettings()
    for field in engine_fields():
        default = getattr(defaults, field.name)
        shown = NONE_DEFAULTS.get(field.name, "none") if default is None else default
        text = docs.get(field.name, f"EngineSettings.{field.name}")
        note = f"; {NOTES[field.name]}" if field.name in NOTES else ""
        kwargs = _argument_kwargs(field, default)
        group.add_argument(flag_name(field.name), dest=field.name, default=None,
                           help=_escape(f"{text}{note} (default: {shown})"), **kwargs)


def _argument_kwargs(field: dataclasses.Field, default: Any) -> dict[str, Any]:
    """Type, choices and metavar of a field's flag from its annotation (a string under PEP 563)."""
    kind = str(field.type).replace(" | None", "")
    if field.name in FIELD_CHOICES:
        return {"choices": FIELD_CHOICES[field.name]}
    if kind == "bool":
        return {"action": argparse.BooleanOptionalAction}
    if kind == "int":
        return {"type": _integer, "metavar": "N"}
    if kind == "float":
        return {"type": _number, "metavar": "X"}
    return {"metavar": "VALUE"}


def _integer(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None


def _number(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None


def _escape(text: str) -> str:
    return text.replace("%", "%%")  # argparse formats help strings with %


def engine_overrides(args: argparse.Namespace) -> dict[str, Any]:
    """The engine flags given on the command line, as ``EngineSettings`` overrides."""
    return {f.name: getattr(args, f.name) for f in engine_fields() if getattr(args, f.name, None) is not None}
