"""Where the facade's connection comes from: a kubeconfig or the in-cluster service account.

:func:`load_target` tries, in order: ``kubeconfig`` (an explicit path), ``$KUBECONFIG`` (a list,
merged as kubectl merges it: :mod:`.kubeconfigs`), the in-cluster service account,
``~/.kube/config``, and raises
:class:`~aicr_pytest.core.errors.UsageError` naming what was tried.  The configuration it returns
has urllib3's own retries off: the facade's :class:`~aicr_pytest.kube.transport.RetryPolicy` is
the one retry policy (bounded and counted).  A user's ``exec`` credential plugin is run once under a
bound before the client runs it (:func:`~aicr_pytest.kube.kubeconfigs.run_exec_plugin`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from aicr_pytest.core.errors import UsageError
from aicr_pytest.kube.kubeconfigs import (
    DEFAULT_EXEC_TIMEOUT_S,
    read_merged,
    regular_or_refuse,
    run_exec_plugin,
    select,
)
from aicr_pytest.kube.reach import Where

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


def _exec_cache_key(exe: Any) -> str:
    import json

    return json.dumps(exe, sort_keys=True, default=str)


#: exec plugins that already ran successfully in this process (the client runs them again itself)
_EXEC_OK: set[str] = set()


def _bound_client_exec(timeout: float) -> None:
    """The ``kubernetes`` client runs an exec plugin itself (at load, and again to refresh an
    expired credential) and waits for it for ever: its runs get the same bound as ours."""
    from kubernetes.config import kube_config
    from kubernetes.config.config_exception import ConfigException

    current: Any = getattr(kube_config, "ExecProvider")  # noqa: B009 - not re-exported for mypy
    if getattr(current, "aicr_timeout", None) is not None:
        current.aicr_timeout = timeout
        return

    class BoundedExecProvider(current):  # type: ignore[misc]
        aicr_timeout = timeout

        def run(self, previous_response: Any = None) -> Any:
            exe = {
                "command": self.args[0],
                "args": self.args[1:],
                "apiVersion": self.api_version,
                "env": [{"name": k, "value": v} for k, v in self.env.items()],
            }
            try:
                return run_exec_plugin(exe, "(kubeconfig user)", float(type(self).aicr_timeout))
            except UsageError as err:  # the client logs and goes on without a credential: 401
                raise ConfigException(str(err)) from None

    setattr(kube_config, "ExecProvider", BoundedExecProvider)  # noqa: B010 - the module's own name


def _from_merged(
    doc: dict[str, Any], context: str | None, source_label: str, source: str, exec_timeout: float
) -> tuple[Any, str, Where]:
    from kubernetes import config as k8s_config
    from kubernetes.config.config_exception import ConfigException

    name, where, user = select(doc, context, source)
    exe = user.get("exec")
    if isinstance(exe, dict) and _exec_cache_key(exe) not in _EXEC_OK:
        run_exec_plugin(exe, where.user or "(unnamed)", exec_timeout)
        _EXEC_OK.add(_exec_cache_key(exe))
    if isinstance(exe, dict):
        _bound_client_exec(exec_timeout)
    cfg = _new_configuration()
    try:
        k8s_config.load_kube_config_from_dict(  # type: ignore[no-untyped-call]
            doc, context=name, client_configuration=cfg, persist_config=False
        )
    except (ConfigException, OSError, ValueError, KeyError, TypeError) as exc:
        raise UsageError(f"cannot load kubeconfig {source} ({source_label}): {exc}") from exc
    text = f"kubeconfig {source}" + (f" (context {context})" if context else "")
    return cfg, text, where


def load_target(
    kubeconfig: str | None, context: str | None, *, exec_timeout: float = DEFAULT_EXEC_TIMEOUT_S
) -> tuple[Any, str, Where]:
    """The ``kubernetes`` client configuration, where it came from (the
    :attr:`~aicr_pytest.kube.client.Cluster.source` text) and the :class:`Where` it points at."""
    from kubernetes.config.config_exception import ConfigException

    if kubeconfig:
        path = Path(kubeconfig).expanduser()
        if not regular_or_refuse(path, "--kubeconfig"):
            raise UsageError(f"kubeconfig not found: {kubeconfig}")
        doc = read_merged([path], "--kubeconfig") or {}
        return _from_merged(doc, context, "--kubeconfig", str(path), exec_timeout)
    env = os.environ.get("KUBECONFIG", "")
    if env.strip():
        paths = [Path(p).expanduser() for p in env.split(os.pathsep) if p]
        merged = read_merged(paths, "$KUBECONFIG")
        if merged is None:
            raise UsageError(f"KUBECONFIG is set but names no existing file: {env}")
        return _from_merged(merged, context, "$KUBECONFIG", env, exec_timeout)
    tried = ["--kubeconfig (not given)", "$KUBECONFIG (not set)"]
    if os.environ.get("KUBERNETES_SERVICE_HOST") and Path(_IN_CLUSTER_TOKEN).is_file():
        try:
            cfg = _in_cluster_configuration()
        except ConfigException as exc:
            tried.append(f"in-cluster service account ({exc})")
        else:
            if context:
                raise UsageError("--context cannot be used with the in-cluster service account")
            return cfg, IN_CLUSTER_SOURCE, Where(server=str(cfg.host), user="service account")
    else:
        tried.append("in-cluster service account (not running in a pod)")
    default = Path("~/.kube/config").expanduser()
    if regular_or_refuse(default, "~/.kube/config"):
        doc = read_merged([default], "~/.kube/config") or {}
        return _from_merged(doc, context, "~/.kube/config", str(default), exec_timeout)
    tried.append(f"{default} (missing)")
    raise UsageError("no Kubernetes configuration found; tried " + ", ".join(tried))


def load_configuration(kubeconfig: str | None, context: str | None) -> tuple[Any, str]:
    """The ``kubernetes`` client configuration to connect with, and where it came from (the
    :attr:`~aicr_pytest.kube.client.Cluster.source` text)."""
    cfg, source, _ = load_target(kubeconfig, context)
    return cfg, source


__all__ = ["IN_CLUSTER_SOURCE", "in_cluster", "load_configuration", "load_target"]
