"""Rendering of workload templates under ``runtimes/``.

Two layers, applied in this order:

1. **jinja2** for our own templates: a :class:`~jinja2.sandbox.SandboxedEnvironment` with
   :class:`~jinja2.StrictUndefined` (a missing variable is an error, never an empty string).
   Jinja comments use ``{##`` … ``##}`` so shell text such as ``${#array[@]}`` passes through.
2. **``${VAR}`` placeholders**: exact ``str.replace`` of each *known* key, as AICR does.
   Unknown ``${…}`` and shell syntax (``$PATH``, ``"$@"``, ``${PIPESTATUS[0]}``)
   are left untouched.  This is what makes a user's ``--data`` runtime a drop-in: the same file
   renders the same way from ``runtimes/nccl/<accelerator>/<service>/`` as from
   ``--data/validators/performance/testdata/<accelerator>/<service>/``.

A recipe-supplied runtime never goes through jinja2 (user text is data, not a template): only
layer 2 applies to it (:func:`substitute_placeholders`).
"""

from __future__ import annotations

import functools
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from aicr_pytest.core import yamlio
from aicr_pytest.core.errors import first_line
from aicr_pytest.core.resources import bundled_dir

if TYPE_CHECKING:  # jinja2 is imported when a template is rendered, not at start-up
    import jinja2
    from jinja2.sandbox import SandboxedEnvironment

#: The variables a recipe-supplied runtime gets (the guide's "generic template variables").
GENERIC_VARIABLES: tuple[str, ...] = (
    "NAMESPACE",
    "WORKER_COUNT",
    "GPU_COUNT_PER_NODE",
    "GPU_COUNT",
    "TEST_TYPE",
    "MIN_MESSAGE_SIZE",
    "MAX_MESSAGE_SIZE",
)

MSG_TEMPLATE_NOT_FOUND = "template {name!r} not found under {root}"
MSG_TEMPLATE_UNDEFINED = "template {name!r}: {error}"
MSG_TEMPLATE_SYNTAX = "template {name!r} line {line}: {error}"
MSG_TEMPLATE_YAML = "template {name!r} did not render to valid YAML: {error}"


class TemplateRenderError(RuntimeError):
    """One of our templates could not be rendered (a bug or a missing context value)."""


def runtimes_root() -> Path:
    """Directory of our workload templates (the bundled ``runtimes/``)."""
    return bundled_dir("runtimes")


def _strict_tojson(env: jinja2.Environment, value: Any) -> Any:
    """``tojson`` that treats an undefined value as the error it is (json would raise TypeError)."""
    import jinja2
    from jinja2.utils import htmlsafe_json_dumps

    if isinstance(value, jinja2.Undefined):
        value._fail_with_undefined_error()
    return htmlsafe_json_dumps(
        value, dumps=env.policies["json.dumps_function"], **env.policies["json.dumps_kwargs"]
    )


@functools.lru_cache(maxsize=8)
def _environment(root: Path) -> SandboxedEnvironment:
    import jinja2
    from jinja2.sandbox import SandboxedEnvironment

    env = SandboxedEnvironment(
        loader=jinja2.FileSystemLoader(str(root)),
        undefined=jinja2.StrictUndefined,
        autoescape=False,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        comment_start_string="{##",
        comment_end_string="##}",
    )
    env.filters["tojson"] = jinja2.pass_environment(_strict_tojson)
    return env


def substitute_placeholders(
    text: str,
    values: Mapping[str, object],
    *,
    allowed: Collection[str] = GENERIC_VARIABLES,
) -> str:
    """Replace ``${KEY}`` for each key in ``values`` that is also in ``allowed``; nothing else."""
    for key, value in values.items():
        if key in allowed:
            text = text.replace("${" + key + "}", str(value))
    return text


def render_text(
    name: str,
    context: Mapping[str, Any],
    *,
    root: Path | None = None,
    placeholders: Mapping[str, object] | None = None,
) -> str:
    """Render template ``name`` (a ``/`` path under ``root``, default the ``runtimes`` package)."""
    import jinja2

    base = (root or runtimes_root()).resolve()
    env = _environment(base)
    try:
        template = env.get_template(name)
        text = template.render(**context)
    except jinja2.TemplateNotFound:
        raise TemplateRenderError(MSG_TEMPLATE_NOT_FOUND.format(name=name, root=base)) from None
    except jinja2.TemplateSyntaxError as exc:
        raise TemplateRenderError(
            MSG_TEMPLATE_SYNTAX.format(name=name, line=exc.lineno, error=exc.message)
        ) from None
    except jinja2.UndefinedError as exc:
        raise TemplateRenderError(MSG_TEMPLATE_UNDEFINED.format(name=name, error=exc.message)) from None
    except jinja2.TemplateError as exc:  # e.g. SecurityError from the sandbox
        raise TemplateRenderError(MSG_TEMPLATE_UNDEFINED.format(name=name, error=exc.message)) from None
    if placeholders:
        text = substitute_placeholders(text, placeholders)
    return text


def render(
    name: str,
    context: Mapping[str, Any],
    *,
    root: Path | None = None,
    placeholders: Mapping[str, object] | None = None,
) -> list[Any]:
    """Render ``name`` and parse it: the list of YAML documents (``None`` documents dropped)."""
    text = render_text(name, context, root=root, placeholders=placeholders)
    try:
        return [doc for doc in yamlio.load_all(text) if doc is not None]
    except yaml.YAMLError as exc:
        raise TemplateRenderError(MSG_TEMPLATE_YAML.format(name=name, error=first_line(exc))) from None


__all__ = [
    "GENERIC_VARIABLES",
    "TemplateRenderError",
    "render",
    "render_text",
    "runtimes_root",
    "substitute_placeholders",
]
