"""``aicr-pytest snapshot --template FILE``: the snapshot rendered through a template of your own.

AICR renders a Go template (with Sprig's functions) over its Snapshot struct; aicr-pytest renders a
Jinja2 template, in Jinja2's sandbox, over the snapshot document: the variables are its top-level
keys (``kind``, ``apiVersion``, ``metadata``, ``measurements``) and ``snapshot``, the whole
document. An undefined name is an error, never an empty string. As in AICR, the output is written
where ``--output`` says (a file or stdout, not a ``cm://`` ConfigMap) and needs the YAML format.

Checked before the cluster is touched (exit 2, one line): the file exists and is not a directory,
``--format`` is not ``json``, the output is not a ConfigMap, the template parses. A template that
fails while rendering is exit 8 after the capture (:class:`TemplateRenderError`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import jinja2
from jinja2.sandbox import SandboxedEnvironment

from aicr_pytest.core.errors import UsageError

MSG_NOT_FOUND: Final = "template file not found: {path}"
MSG_IS_DIRECTORY: Final = "template path is a directory, not a file: {path}"
MSG_UNREADABLE: Final = "cannot read template file {path}: {error}"
MSG_NEEDS_YAML: Final = '--template requires YAML format; --format must be "yaml" or omitted'
MSG_NO_CONFIGMAP: Final = "--template writes a file or stdout, not a ConfigMap: {uri}"
MSG_PARSE: Final = "failed to parse template {path}: {error} (line {line})"
MSG_RENDER: Final = "[INTERNAL] failed to execute template {path}: {error}"


class TemplateRenderError(Exception):
    """The template parsed but failed while rendering (exit 8)."""


def _environment() -> SandboxedEnvironment:
    return SandboxedEnvironment(
        undefined=jinja2.StrictUndefined, keep_trailing_newline=True, autoescape=False
    )


@dataclass(frozen=True)
class SnapshotTemplate:
    """A parsed ``--template`` file."""

    path: str
    template: jinja2.Template

    def render(self, document: Mapping[str, Any]) -> str:
        """The rendered text; raises :class:`TemplateRenderError` with one line."""
        try:
            return self.template.render({**document, "snapshot": document})
        except Exception as exc:  # anything the template does wrong is the template's error
            error = " ".join(str(exc).split()) or type(exc).__name__
            raise TemplateRenderError(MSG_RENDER.format(path=self.path, error=error)) from None


def load_template(path: str, *, fmt: str, output_is_configmap: str | None = None) -> SnapshotTemplate:
    """Check and parse ``--template`` (module docstring); raises :class:`UsageError`.

    ``output_is_configmap``: the ``cm://`` URI ``--output`` names, when it names one."""
    if fmt != "yaml":
        raise UsageError(MSG_NEEDS_YAML)
    file = Path(path).expanduser()
    if not file.exists():
        raise UsageError(MSG_NOT_FOUND.format(path=path))
    if file.is_dir():
        raise UsageError(MSG_IS_DIRECTORY.format(path=path))
    if output_is_configmap:
        raise UsageError(MSG_NO_CONFIGMAP.format(uri=output_is_configmap))
    try:
        source = file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise UsageError(MSG_UNREADABLE.format(path=path, error=reason)) from None
    try:
        template = _environment().from_string(source)
    except jinja2.TemplateSyntaxError as exc:
        error = exc.message or "syntax error"
        raise UsageError(MSG_PARSE.format(path=path, error=error, line=exc.lineno)) from None
    return SnapshotTemplate(path=path, template=template)


__all__ = [
    "MSG_IS_DIRECTORY",
    "MSG_NEEDS_YAML",
    "MSG_NOT_FOUND",
    "MSG_NO_CONFIGMAP",
    "MSG_PARSE",
    "MSG_RENDER",
    "SnapshotTemplate",
    "TemplateRenderError",
    "load_template",
]
