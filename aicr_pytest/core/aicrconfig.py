"""``--config``: an AICRConfig file whose ``spec.validate`` gives ``validate``'s defaults.

Precedence, as in AICR: an explicit flag (or its environment variable) >
the config value > the flag's default.  :func:`load_validate_config` reads the file and returns the
``spec.validate`` values keyed by their dotted path (``agent.namespace``, ``execution.timeout``);
the option table maps each path to its option.  Values are converted to the form the command line
gives (lists of strings, ``key=value`` selectors, toleration strings), so one validation path
serves both.

Only local files are read: an ``http(s)://`` config is refused with one line (aicr-pytest fetches
recipes and snapshots over HTTPS, but a config that changes where a run deploys is read from disk).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

from aicr_pytest.core import yamlio
from aicr_pytest.core.errors import UsageError, first_line
from aicr_pytest.core.inputfile import check_regular

KIND: Final = "AICRConfig"

MSG_URL: Final = (
    "--config {path}: loading an AICRConfig from a URL is not supported (no network fetch for run "
    "configuration); download it and pass the file"
)
MSG_MISSING: Final = "--config {path}: file not found"
MSG_UNREADABLE: Final = "--config {path}: cannot read: {error}"
MSG_NOT_YAML: Final = "--config {path}: not valid YAML: {error}"
MSG_KIND: Final = '--config {path}: kind is "{kind}", expected "AICRConfig"'
MSG_SHAPE: Final = "--config {path}: {where} must be a {what}"

#: every ``spec.validate`` path the option table reads, with the shape it must have
KNOWN_KEYS: Final[dict[str, str]] = {
    "input.recipe": "string",
    "input.snapshot": "string",
    "execution.phases": "list",
    "execution.failOnError": "bool",
    "execution.failFast": "bool",
    "execution.noCluster": "bool",
    "execution.noCleanup": "bool",
    "execution.timeout": "string",
    "execution.skipChecks": "list",
    "execution.nodeHealth": "bool",  # an aicr-pytest extension: --node-health
    "execution.isolateBadNodes": "bool",  # an aicr-pytest extension: --isolate-bad-nodes
    "execution.allowFakeNodes": "bool",  # an aicr-pytest extension: --allow-fake-nodes
    "execution.cncfShould": "bool",  # an aicr-pytest extension: --cncf-should
    "agent.namespace": "string",
    "agent.image": "string",
    "agent.imagePullSecrets": "list",
    "agent.jobName": "string",
    "agent.serviceAccountName": "string",
    "agent.requireGpu": "bool",
    "agent.nodeSelector": "map",
    "agent.tolerations": "tolerations",
    "cncf.checklist": "string",
    "cncf.platformName": "string",
    "cncf.platformVersion": "string",
    "cncf.vendorName": "string",
    "cncf.websiteUrl": "string",
    "cncf.repoUrl": "string",
    "cncf.documentationUrl": "string",
    "cncf.productLogoUrl": "string",
    "cncf.description": "string",
    "cncf.contactEmailAddress": "string",
    "cncf.k8sConformanceUrl": "string",
}


def _toleration_text(item: Mapping[str, Any]) -> str:
    """A Kubernetes toleration map as ``--toleration`` spells it (``key=value:Effect``, ``*``)."""
    key = str(item.get("key") or "")
    effect = str(item.get("effect") or "")
    if not key and str(item.get("operator") or "") == "Exists" and not effect:
        return "*"
    value = item.get("value")
    spec = f"{key}={value}" if value not in (None, "") else key
    return f"{spec}:{effect}"


def _convert(path: str, where: str, shape: str, value: Any) -> Any:
    def bad(what: str) -> UsageError:
        return UsageError(MSG_SHAPE.format(path=path, where=where, what=what))

    if shape == "string":
        if isinstance(value, bool) or not isinstance(value, str | int | float):
            raise bad("string")
        return str(value)
    if shape == "bool":
        if not isinstance(value, bool):
            raise bad("boolean")
        return value
    if shape == "list":
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise bad("list of strings")
        return list(value)
    if shape == "map":
        if not isinstance(value, dict):
            raise bad("map of strings")
        return [f"{k}={v}" for k, v in value.items()]
    if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
        raise bad("list of tolerations")
    return [_toleration_text(v) for v in value]


def parse_validate_config(doc: object, path: str) -> dict[str, Any]:
    """``{dotted spec.validate path: value as the command line gives it}`` (raises UsageError)."""
    if not isinstance(doc, dict):
        raise UsageError(MSG_SHAPE.format(path=path, where="the document", what="mapping"))
    kind = doc.get("kind")
    if kind != KIND:
        raise UsageError(MSG_KIND.format(path=path, kind=kind if kind is not None else ""))
    spec = doc.get("spec") or {}
    if not isinstance(spec, dict):
        raise UsageError(MSG_SHAPE.format(path=path, where="spec", what="mapping"))
    validate = spec.get("validate") or {}
    if not isinstance(validate, dict):
        raise UsageError(MSG_SHAPE.format(path=path, where="spec.validate", what="mapping"))
    out: dict[str, Any] = {}
    for dotted, shape in KNOWN_KEYS.items():
        section, key = dotted.split(".", 1)
        block = validate.get(section)
        if block is None:
            continue
        if not isinstance(block, dict):
            raise UsageError(MSG_SHAPE.format(path=path, where=f"spec.validate.{section}", what="mapping"))
        if block.get(key) is not None:
            out[dotted] = _convert(path, f"spec.validate.{dotted}", shape, block[key])
    return out


def load_validate_config(path: str) -> dict[str, Any]:
    """Read ``--config PATH`` (see :func:`parse_validate_config`)."""
    if path.lower().startswith(("http://", "https://")):
        raise UsageError(MSG_URL.format(path=path))
    file = Path(path).expanduser()
    check_regular(file, "--config")  # a FIFO or a device is never opened (it would hang the run)
    if not file.is_file():
        raise UsageError(MSG_MISSING.format(path=path))
    try:
        text = file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise UsageError(MSG_UNREADABLE.format(path=path, error=err)) from None
    try:
        doc = yamlio.load(text)
    except Exception as err:  # yaml.YAMLError and its subclasses; one line, never a traceback
        raise UsageError(MSG_NOT_YAML.format(path=path, error=first_line(err))) from None
    return parse_validate_config(doc, path)


__all__ = ["KIND", "KNOWN_KEYS", "load_validate_config", "parse_validate_config"]
