"""kubeconfig files as kubectl reads them: the ``KUBECONFIG`` list merged, and exec plugins bounded.

* :func:`read_merged` reads each file of a list and merges them the way kubectl's loader does: the
  first file that sets ``current-context`` wins, and the first occurrence of a named cluster, user or
  context wins (later ones are ignored, not merged field by field).  A missing file in the list is
  skipped (kubectl does the same); a name that is not a regular file (a FIFO, a socket, a device, a
  directory) is refused in one line before it is opened, so a FIFO cannot hang the run.  Relative
  paths inside a file (certificate and key files, ``tokenFile``, an exec plugin's ``command`` with a
  ``/``) are made absolute against that file's directory, as kubectl resolves them.
* :func:`select` picks the context (the one named, else the merged ``current-context``) and
  returns its :class:`~aicr_pytest.kube.reach.Where` (server, context, cluster, user, CA file);
  an unknown context is one line listing the known ones.
* :func:`run_exec_plugin` runs a user's ``exec`` credential plugin once, under a bound, before the
  ``kubernetes`` client runs it (that client waits for ever and logs a failure instead of raising):
  a plugin that exits non-zero, prints something that is not an ``ExecCredential`` or does not end
  in time is one line with the plugin's own message.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import subprocess
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from aicr_pytest.core.errors import UsageError
from aicr_pytest.core.inputfile import kind_of
from aicr_pytest.kube.reach import Where

#: how long an exec credential plugin may take (``--reach-timeout`` doubled, at least this)
DEFAULT_EXEC_TIMEOUT_S = 20.0

MSG_NOT_REGULAR = "kubeconfig {path} ({label}) is not a regular file ({kind}): refusing to read it"
MSG_UNKNOWN_CONTEXT = 'cannot load kubeconfig {source}: context "{context}" not found (contexts: {known})'
MSG_NO_CONTEXT = (
    "cannot load kubeconfig {source}: no current-context set and no --kube-context given (contexts: {known})"
)
MSG_EXEC_FAILED = "kubeconfig user {user}: credential plugin {command} failed (exit {code}): {message}"
MSG_EXEC_GARBAGE = "kubeconfig user {user}: credential plugin {command} printed no ExecCredential: {message}"
MSG_EXEC_HUNG = "kubeconfig user {user}: credential plugin {command} did not finish within {timeout:g}s"
MSG_EXEC_MISSING = "kubeconfig user {user}: credential plugin {command} cannot be started: {message}"

_PATH_KEYS = {
    "clusters": ("cluster", ("certificate-authority",)),
    "users": ("user", ("client-certificate", "client-key", "tokenFile")),
}
_NAMED = ("clusters", "users", "contexts")


def regular_or_refuse(path: Path, label: str) -> bool:
    """``True`` for a regular file, ``False`` when missing; anything else raises :class:`UsageError`."""
    try:
        mode = path.stat().st_mode  # follows a symlink to what it names
    except FileNotFoundError:
        return False
    except OSError as exc:
        raise UsageError(f"kubeconfig {path} ({label}): {exc.strerror or exc}") from None
    if not stat.S_ISREG(mode):
        raise UsageError(MSG_NOT_REGULAR.format(path=path, label=label, kind=kind_of(mode)))
    return True


def _yaml_problem(exc: yaml.YAMLError) -> str:
    problem = getattr(exc, "problem", None) or "cannot parse"
    mark = getattr(exc, "problem_mark", None)
    where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
    return f"not valid YAML: {problem}{where}"


def _absolutize(doc: dict[str, Any], base: Path) -> None:
    for section, (inner, keys) in _PATH_KEYS.items():
        for entry in doc.get(section) or []:
            body = (entry or {}).get(inner) if isinstance(entry, dict) else None
            if not isinstance(body, dict):
                continue
            for key in keys:
                value = body.get(key)
                if isinstance(value, str) and value and not os.path.isabs(value):
                    body[key] = str(base / os.path.expanduser(value))
            exe = body.get("exec") if section == "users" else None
            if isinstance(exe, dict):
                command = exe.get("command")
                if isinstance(command, str) and "/" in command and not os.path.isabs(command):
                    exe["command"] = str(base / command)


def read_one(path: Path, label: str) -> dict[str, Any]:
    """One kubeconfig file as a dict (relative paths made absolute); :class:`UsageError` otherwise."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"cannot load kubeconfig {path} ({label}): {exc}") from None
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise UsageError(f"cannot load kubeconfig {path} ({label}): {_yaml_problem(exc)}") from None
    if doc is None:
        doc = {}
    if not isinstance(doc, dict):
        raise UsageError(f"cannot load kubeconfig {path} ({label}): not a mapping")
    _absolutize(doc, path.parent.resolve())
    return doc


def merge(docs: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """kubectl's merge: first ``current-context`` set wins; first named entry of each list wins."""
    merged: dict[str, Any] = {"apiVersion": "v1", "kind": "Config"}
    for name in _NAMED:
        merged[name] = []
    seen: dict[str, set[str]] = {name: set() for name in _NAMED}
    for doc in docs:
        if not merged.get("current-context") and doc.get("current-context"):
            merged["current-context"] = doc["current-context"]
        for name in _NAMED:
            for entry in doc.get(name) or []:
                if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
                    continue
                if entry["name"] in seen[name]:
                    continue
                seen[name].add(entry["name"])
                merged[name].append(entry)
    return merged


def read_merged(paths: Sequence[Path], label: str) -> dict[str, Any] | None:
    """The merged configuration of ``paths`` (``None`` when none of them exists)."""
    docs = [read_one(p, label) for p in paths if regular_or_refuse(p, label)]
    return merge(docs) if docs else None


def _named(doc: Mapping[str, Any], section: str, name: str, inner: str) -> dict[str, Any]:
    for entry in doc.get(section) or []:
        if isinstance(entry, dict) and entry.get("name") == name:
            body = entry.get(inner)
            return body if isinstance(body, dict) else {}
    return {}


def select(doc: Mapping[str, Any], context: str | None, source: str) -> tuple[str, Where, dict[str, Any]]:
    """``(context name, where, user entry)`` of the context to use; one line when there is none."""
    known = ", ".join(str(c.get("name")) for c in doc.get("contexts") or [] if isinstance(c, dict)) or "none"
    name = context or str(doc.get("current-context") or "")
    if not name:
        raise UsageError(MSG_NO_CONTEXT.format(source=source, known=known))
    ctx = None
    for entry in doc.get("contexts") or []:
        if isinstance(entry, dict) and entry.get("name") == name:
            ctx = entry.get("context") if isinstance(entry.get("context"), dict) else {}
    if ctx is None:
        raise UsageError(MSG_UNKNOWN_CONTEXT.format(source=source, context=name, known=known))
    cluster_name = str(ctx.get("cluster") or "")
    user_name = str(ctx.get("user") or "")
    cluster = _named(doc, "clusters", cluster_name, "cluster")
    user = _named(doc, "users", user_name, "user")
    inline = "(inline certificate-authority-data)" if cluster.get("certificate-authority-data") else ""
    ca = str(cluster.get("certificate-authority") or inline)
    where = Where(
        server=str(cluster.get("server") or ""), context=name, cluster=cluster_name, user=user_name, ca=ca
    )
    return name, where, user


def _last_line(text: str) -> str:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return (lines[-1] if lines else "")[:300]


#: ``runner(args, env, timeout) -> (exit code, stdout, stderr)``; raises ``subprocess.TimeoutExpired``
Runner = Callable[[list[str], dict[str, str], float], tuple[int, str, str]]


def _run(args: list[str], env: dict[str, str], timeout: float) -> tuple[int, str, str]:
    """Run in a session of its own, so a plugin that hangs is killed with everything it started."""
    import signal

    proc = subprocess.Popen(
        args,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        start_new_session=True,
    )
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:
            proc.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.communicate(timeout=2.0)
        raise
    return proc.returncode, out or "", err or ""


def run_exec_plugin(
    exe: Mapping[str, Any],
    user: str,
    timeout: float = DEFAULT_EXEC_TIMEOUT_S,
    *,
    runner: Runner = _run,
) -> dict[str, Any]:
    """Run an ``exec`` credential plugin once (bounded); its ``status`` or one-line :class:`UsageError`."""
    command = str(exe.get("command") or "")
    if not command:
        raise UsageError(MSG_EXEC_MISSING.format(user=user, command="(none)", message="no command set"))
    api_version = str(exe.get("apiVersion") or "client.authentication.k8s.io/v1")
    env = dict(os.environ)
    for item in exe.get("env") or []:
        if isinstance(item, dict) and item.get("name"):
            env[str(item["name"])] = str(item.get("value") or "")
    info = {"apiVersion": api_version, "kind": "ExecCredential", "spec": {"interactive": False}}
    env["KUBERNETES_EXEC_INFO"] = json.dumps(info)
    args = [command, *[str(a) for a in exe.get("args") or []]]
    try:
        code, out, err = runner(args, env, timeout)
    except subprocess.TimeoutExpired:
        raise UsageError(MSG_EXEC_HUNG.format(user=user, command=command, timeout=timeout)) from None
    except OSError as exc:
        raise UsageError(
            MSG_EXEC_MISSING.format(user=user, command=command, message=exc.strerror or exc)
        ) from None
    if code != 0:
        message = _last_line(err) or _last_line(out) or "no message"
        raise UsageError(MSG_EXEC_FAILED.format(user=user, command=command, code=code, message=message))
    try:
        data = json.loads(out)
    except ValueError:
        shown = _last_line(out) or "empty output"
        message = repr(shown[:80])
        raise UsageError(MSG_EXEC_GARBAGE.format(user=user, command=command, message=message)) from None
    status = data.get("status") if isinstance(data, dict) else None
    if not isinstance(data, dict) or data.get("kind") != "ExecCredential" or not isinstance(status, dict):
        raise UsageError(
            MSG_EXEC_GARBAGE.format(user=user, command=command, message="not an ExecCredential object")
        )
    if not status.get("token") and not status.get("clientCertificateData"):
        raise UsageError(
            MSG_EXEC_GARBAGE.format(
                user=user, command=command, message="status has neither token nor clientCertificateData"
            )
        )
    return status


__all__ = [
    "DEFAULT_EXEC_TIMEOUT_S",
    "MSG_EXEC_FAILED",
    "MSG_EXEC_GARBAGE",
    "MSG_EXEC_HUNG",
    "MSG_EXEC_MISSING",
    "MSG_NOT_REGULAR",
    "MSG_NO_CONTEXT",
    "MSG_UNKNOWN_CONTEXT",
    "merge",
    "read_merged",
    "read_one",
    "regular_or_refuse",
    "run_exec_plugin",
    "select",
]
