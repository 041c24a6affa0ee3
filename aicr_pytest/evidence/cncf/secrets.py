"""What must never reach an evidence file: secret values from the environment and the kubeconfig.

:func:`secret_values` gathers them (environment variables whose name says token, secret, password,
key or credential; every credential field of the kubeconfig: tokens, passwords, client keys and
certificates, CA data, auth-provider settings, exec-plugin environment values); :func:`scrub`
replaces each one with ``<redacted>``.  Checks never read Secret objects, and the collector quotes
only what checks recorded, so Secret data has no way in; the scrub is the second line of defence.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Final

from aicr_pytest.core import yamlio
from aicr_pytest.core.artifacts import REDACTED

#: environment variable names whose values are secret
SECRET_ENV_RE: Final = re.compile(r"TOKEN|SECRET|PASSW|CREDENTIAL|API_?KEY|ACCESS_?KEY|PRIVATE|AUTH", re.I)
#: values shorter than this are not scrubbed (``1``, ``true`` would mangle every file)
MIN_SECRET_LEN: Final = 6
_USER_FIELDS: Final = ("token", "password", "client-key-data", "client-certificate-data", "username")
_CLUSTER_FIELDS: Final = ("certificate-authority-data",)


def environment_secrets(environ: Mapping[str, str]) -> list[str]:
    return [v for k, v in environ.items() if SECRET_ENV_RE.search(k) and len(v) >= MIN_SECRET_LEN]


def _strings(value: Any) -> Iterable[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)


def kubeconfig_secrets(path: str | Path | None) -> list[str]:
    """Credential values of a kubeconfig file (``[]`` when there is none or it does not parse)."""
    if not path:
        return []
    try:
        doc = yamlio.load(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError, UnicodeDecodeError):
        return []
    if not isinstance(doc, Mapping):
        return []
    found: list[str] = []
    for entry in doc.get("users") or []:
        user = entry.get("user") if isinstance(entry, Mapping) else None
        if not isinstance(user, Mapping):
            continue
        found += [str(user[f]) for f in _USER_FIELDS if isinstance(user.get(f), str)]
        found += list(_strings(user.get("auth-provider")))
        exec_cfg = user.get("exec")
        if isinstance(exec_cfg, Mapping):
            found += [
                str(e["value"])
                for e in exec_cfg.get("env") or []
                if isinstance(e, Mapping) and e.get("value")
            ]
        token_file = user.get("tokenFile")
        if isinstance(token_file, str):
            with contextlib.suppress(OSError):
                found.append(Path(token_file).read_text(encoding="utf-8").strip())
    for entry in doc.get("clusters") or []:
        cluster = entry.get("cluster") if isinstance(entry, Mapping) else None
        if isinstance(cluster, Mapping):
            found += [str(cluster[f]) for f in _CLUSTER_FIELDS if isinstance(cluster.get(f), str)]
    return [v for v in found if len(v) >= MIN_SECRET_LEN]


def secret_values(environ: Mapping[str, str], kubeconfigs: Iterable[str | Path | None]) -> tuple[str, ...]:
    """Every secret of the environment and the kubeconfig files, longest first, no duplicates."""
    values = set(environment_secrets(environ))
    for path in kubeconfigs:
        values.update(kubeconfig_secrets(path))
    return tuple(sorted(values, key=lambda v: (-len(v), v)))


def scrub(text: str, secrets: Iterable[str]) -> str:
    """``text`` with every secret value replaced by ``<redacted>``."""
    for secret in secrets:
        if secret:
            text = text.replace(secret, REDACTED)
    return text


__all__ = [
    "MIN_SECRET_LEN",
    "SECRET_ENV_RE",
    "environment_secrets",
    "kubeconfig_secrets",
    "scrub",
    "secret_values",
]
