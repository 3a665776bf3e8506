"""A griffe extension for the API reference: a docstring's ``Example:`` section is rendered as code.

The project's docstrings title their doctest section ``Example:`` (singular, as Napoleon reads it); griffe's
Google parser knows only ``Examples:`` and renders ``Example:`` as a text admonition, so the ``>>>`` lines
would be read as Markdown. This renames the section title before griffe parses the docstring.
"""

from __future__ import annotations

import re

import griffe

_TITLE = re.compile(r"^(\s*)Example:\s*$", re.MULTILINE)


class ExampleSections(griffe.Extension):
    """Rewrite ``Example:`` section titles to ``Examples:`` on every object griffe loads."""

    def on_instance(self, *, obj: griffe.Object, **kwargs: object) -> None:
        if obj.docstring is not None:
            obj.docstring.value = _TITLE.sub(r"\1Examples:", obj.docstring.value)
