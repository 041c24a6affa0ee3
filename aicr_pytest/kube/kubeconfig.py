"""Where the facade's connection comes from: a kubeconfig or the in-cluster service account.

:func:`load_configuration` tries, in order: ``kubeconfig`` (an explicit path), ``$KUBECONFIG``,
the in-cluster service account, ``~/.kube/config``, and raises
:class:`~aicr_pytest.core.errors.UsageError` naming what was tried.  The configuration it returns
has urllib3's own retries off: the facade's :class:`~aicr_pytest.kube.transport.RetryPolicy` is
the one retry policy (bounded and counted).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from aicr_pytest.core.errors import UsageError

_IN_CLUSTER_TOKEN = "/var/run/secrets/kubernetes.io/serviceaccount/token"
_IN_CLUSTER_CA = "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt"
#: the :attr:`~aicr_pytest.kube.client.Cluster.source` text (and the header line's) of in-cluster mode
IN_CLUSTER_SOURCE = "in-cluster service account"


def in_cluster(kubeconfig: str | None, environ: Mapping[str, str] | None = None) -> bool:
    """Whether :func:`load_configuration` will use the pod's service account: no ``--kubeconfig``,
    no ``$KUBECONFIG``, and ``KUBERNETES_SERVICE_HOST`` with the token and CA files in place."""
    env = os.environ if environ is None else environ
    return (
        not kubeconfig
        and not env.get("KUBECONFIG", "").strip()
        and bool(env.get("KUBERNETES_SERVICE_HOST"))
        and Path(_IN_CLUSTER_TOKEN).is_file()
        and Path(_IN_CLUSTER_CA).is_file()
    )


def _in_cluster_configuration() -> Any:
    """The service account's configuration (token, CA, ``KUBERNETES_SERVICE_HOST``/``_PORT``)."""
    from kubernetes.config.incluster_config import InClusterConfigLoader

    cfg = _new_configuration()
    loader = InClusterConfigLoader(  # type: ignore[no-untyped-call]
        token_filename=_IN_CLUSTER_TOKEN, cert_filename=_IN_CLUSTER_CA
    )
    loader.load_and_set(cfg)  # type: ignore[no-untyped-call]
    return cfg


def _new_configuration() -> Any:
    from kubernetes import client as k8s_client

    cfg = type.__call__(k8s_client.Configuration)
    # One retry policy (ours, bounded and counted) instead of urllib3's silent defaults.
    cfg.retries = False
    return cfg


def _yaml_problem(exc: yaml.YAMLError) -> str:
    """``not valid YAML: <problem> (line L, column C)`` from a parser error (a multi-line text)."""
    problem = getattr(exc, "problem", None) or "cannot parse"
    mark = getattr(exc, "problem_mark", None)
    where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
    return f"not valid YAML: {problem}{where}"


def load_configuration(kubeconfig: str | None, context: str | None) -> tuple[Any, str]:
    """The ``kubernetes`` client configuration to connect with, and where it came from (the
    :attr:`~aicr_pytest.kube.client.Cluster.source` text)."""
    from kubernetes import config as k8s_config
    from kubernetes.config.config_exception import ConfigException

    def from_file(path: str, label: str) -> tuple[Any, str]:
        cfg = _new_configuration()
        try:
            k8s_config.load_kube_config(  # type: ignore[no-untyped-call]
                config_file=path, context=context, client_configuration=cfg, persist_config=False
            )
        except (ConfigException, OSError, ValueError, KeyError, TypeError) as exc:
            raise UsageError(f"cannot load kubeconfig {path} ({label}): {exc}") from exc
        except yaml.YAMLError as exc:  # one line: what is wrong and where
            raise UsageError(f"cannot load kubeconfig {path} ({label}): {_yaml_problem(exc)}") from exc
        source = f"kubeconfig {path}" + (f" (context {context})" if context else "")
        return cfg, source

    if kubeconfig:
        if not Path(kubeconfig).expanduser().is_file():
            raise UsageError(f"kubeconfig not found: {kubeconfig}")
        return from_file(str(Path(kubeconfig).expanduser()), "--kubeconfig")
    env = os.environ.get("KUBECONFIG", "")
    if env.strip():
        paths = [p for p in env.split(os.pathsep) if p]
        if not any(Path(p).expanduser().is_file() for p in paths):
            raise UsageError(f"KUBECONFIG is set but names no existing file: {env}")
        return from_file(env, "$KUBECONFIG")
    tried = ["--kubeconfig (not given)", "$KUBECONFIG (not set)"]
    if os.environ.get("KUBERNETES_SERVICE_HOST") and Path(_IN_CLUSTER_TOKEN).is_file():
        try:
            cfg = _in_cluster_configuration()
        except ConfigException as exc:
            tried.append(f"in-cluster service account ({exc})")
        else:
            if context:
                raise UsageError("--context cannot be used with the in-cluster service account")
            return cfg, IN_CLUSTER_SOURCE
    else:
        tried.append("in-cluster service account (not running in a pod)")
    default = Path("~/.kube/config").expanduser()
    if default.is_file():
        return from_file(str(default), "~/.kube/config")
    tried.append(f"{default} (missing)")
    raise UsageError("no Kubernetes configuration found; tried " + ", ".join(tried))


__all__ = ["IN_CLUSTER_SOURCE", "in_cluster", "load_configuration"]
