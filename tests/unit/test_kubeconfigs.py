"""kubeconfig lists merged as kubectl merges them; non-regular files refused; exec plugins bounded.

kubectl's rules (client-go clientcmd loading rules): in a ``KUBECONFIG`` list the first file that
sets ``current-context`` wins, and the first occurrence of a named cluster, user or context wins.
"""

from __future__ import annotations

import os
import socket
import stat
import sys
import textwrap
from pathlib import Path

import pytest

from aicr_pytest.core.errors import UsageError
from aicr_pytest.kube import connect
from aicr_pytest.kube.kubeconfig import load_target
from aicr_pytest.kube.kubeconfigs import merge, read_merged, run_exec_plugin, select


def _config(server: str, current: str | None, ctx: str = "a", token: str = "t") -> str:
    doc = textwrap.dedent(
        f"""\
        apiVersion: v1
        kind: Config
        clusters:
        - name: {ctx}-cluster
          cluster: {{server: "{server}", certificate-authority: ca.pem}}
        users:
        - name: {ctx}-user
          user: {{token: {token}}}
        contexts:
        - name: {ctx}
          context: {{cluster: {ctx}-cluster, user: {ctx}-user}}
        """
    )
    return doc + (f"current-context: {current}\n" if current else "")


@pytest.fixture
def no_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    return tmp_path


def test_first_files_current_context_wins_as_in_kubectl(
    no_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (no_env / "a").mkdir()
    first = no_env / "a" / "first.yaml"
    first.write_text(_config("https://10.0.0.1:6443", "a", "a"))
    second = no_env / "second.yaml"
    second.write_text(_config("https://10.0.0.2:6443", "b", "b"))
    for ca in (no_env / "a" / "ca.pem", no_env / "ca.pem"):
        ca.write_text("not parsed until a request\n")
    monkeypatch.setenv("KUBECONFIG", f"{first}{os.pathsep}{second}")
    cfg, _source, where = load_target(None, None)
    assert cfg.host == "https://10.0.0.1:6443"
    assert (where.context, where.cluster, where.user) == ("a", "a-cluster", "a-user")
    assert where.ca == str(no_env / "a" / "ca.pem")  # relative to the file that named it
    # the second file's context is still selectable by name
    cfg_b, _, where_b = load_target(None, "b")
    assert cfg_b.host == "https://10.0.0.2:6443" and where_b.context == "b"


def test_current_context_set_only_by_a_later_file_is_used() -> None:
    merged = merge([{"clusters": [{"name": "x", "cluster": {"server": "s1"}}]}, {"current-context": "c2"}])
    assert merged["current-context"] == "c2"


def test_first_occurrence_of_a_name_wins_whole() -> None:
    merged = merge(
        [
            {"users": [{"name": "u", "user": {"token": "first"}}]},
            {"users": [{"name": "u", "user": {"token": "second", "client-certificate": "x"}}]},
        ]
    )
    assert merged["users"] == [{"name": "u", "user": {"token": "first"}}]


def test_a_missing_file_in_the_list_is_skipped(tmp_path: Path) -> None:
    real = tmp_path / "k"
    real.write_text(_config("https://10.0.0.1:6443", "a"))
    doc = read_merged([tmp_path / "absent", real], "$KUBECONFIG")
    assert doc is not None and doc["current-context"] == "a"


def test_a_fifo_in_the_list_is_refused_without_reading_it(
    no_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fifo = no_env / "fifo"
    os.mkfifo(fifo)
    real = no_env / "k"
    real.write_text(_config("https://10.0.0.1:6443", "a"))
    monkeypatch.setenv("KUBECONFIG", f"{real}{os.pathsep}{fifo}")
    with pytest.raises(UsageError) as err:
        load_target(None, None)  # would block for ever if the FIFO were opened
    assert (
        str(err.value)
        == f"kubeconfig {fifo} ($KUBECONFIG) is not a regular file (a FIFO): refusing to read it"
    )


def test_a_socket_or_device_as_kubeconfig_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "sock"
    with socket.socket(socket.AF_UNIX) as s:
        s.bind(str(path))
        assert stat.S_ISSOCK(path.stat().st_mode)
        with pytest.raises(UsageError, match=r"is not a regular file \(a socket\)"):
            load_target(str(path), None)
    with pytest.raises(UsageError, match=r"/dev/null \(--kubeconfig\) is not a regular file \(a device\)"):
        load_target("/dev/null", None)


def test_unknown_context_lists_the_known_ones(tmp_path: Path) -> None:
    path = tmp_path / "k"
    path.write_text(_config("https://10.0.0.1:6443", "a"))
    with pytest.raises(UsageError) as err:
        load_target(str(path), "prod")
    assert str(err.value) == f'cannot load kubeconfig {path}: context "prod" not found (contexts: a)'


def test_no_current_context_and_none_named(tmp_path: Path) -> None:
    doc = merge([{"contexts": [{"name": "x", "context": {}}]}])
    with pytest.raises(
        UsageError, match=r"no current-context set and no --kube-context given \(contexts: x\)"
    ):
        select(doc, None, "k")


# -- exec credential plugins ------------------------------------------------------------------------
def _plugin(tmp_path: Path, body: str) -> str:
    script = tmp_path / "plugin.py"
    script.write_text(body)
    return str(script)


def _exec_kubeconfig(tmp_path: Path, script: str) -> Path:
    path = tmp_path / "exec.yaml"
    path.write_text(
        textwrap.dedent(
            f"""\
            apiVersion: v1
            kind: Config
            clusters:
            - name: c
              cluster: {{server: "https://127.0.0.1:1", insecure-skip-tls-verify: true}}
            users:
            - name: sso
              user:
                exec:
                  apiVersion: client.authentication.k8s.io/v1
                  command: {sys.executable}
                  args: [{script}]
            contexts:
            - name: c
              context: {{cluster: c, user: sso}}
            current-context: c
            """
        )
    )
    return path


def test_a_failing_plugin_is_one_line_with_its_own_message(tmp_path: Path) -> None:
    script = _plugin(
        tmp_path,
        "import sys\nprint('refreshing...', file=sys.stderr)\n"
        "print('error: login expired: run `sso login`', file=sys.stderr)\nsys.exit(1)\n",
    )
    with pytest.raises(UsageError) as err:
        load_target(str(_exec_kubeconfig(tmp_path, script)), None)
    assert str(err.value) == (
        f"kubeconfig user sso: credential plugin {sys.executable} failed (exit 1): "
        "error: login expired: run `sso login`"
    )


def test_a_plugin_printing_garbage_is_one_line(tmp_path: Path) -> None:
    script = _plugin(tmp_path, "print('<html>proxy login page</html>')\n")
    with pytest.raises(UsageError) as err:
        load_target(str(_exec_kubeconfig(tmp_path, script)), None)
    assert str(err.value) == (
        f"kubeconfig user sso: credential plugin {sys.executable} printed no ExecCredential: "
        "'<html>proxy login page</html>'"
    )


def test_a_plugin_that_hangs_is_cut_at_the_bound(tmp_path: Path) -> None:
    def hang(args: list[str], env: dict[str, str], timeout: float) -> tuple[int, str, str]:
        import subprocess

        raise subprocess.TimeoutExpired(args, timeout)

    with pytest.raises(UsageError) as err:
        run_exec_plugin({"command": "kubelogin", "apiVersion": "v1"}, "sso", 7.0, runner=hang)
    assert str(err.value) == "kubeconfig user sso: credential plugin kubelogin did not finish within 7s"


def test_the_real_runner_kills_a_hung_plugin(tmp_path: Path) -> None:
    script = _plugin(tmp_path, "import time\ntime.sleep(60)\n")
    with pytest.raises(UsageError, match=r"did not finish within 0.5s"):
        run_exec_plugin({"command": sys.executable, "args": [script]}, "sso", 0.5)


def test_a_plugin_that_cannot_start(tmp_path: Path) -> None:
    with pytest.raises(UsageError) as err:
        run_exec_plugin({"command": str(tmp_path / "no-such-plugin")}, "sso", 1.0)
    assert str(err.value) == (
        f"kubeconfig user sso: credential plugin {tmp_path / 'no-such-plugin'} cannot be started: "
        "No such file or directory"
    )


def test_a_good_plugin_connects(tmp_path: Path) -> None:
    script = _plugin(
        tmp_path,
        "import json, os\ninfo = json.loads(os.environ['KUBERNETES_EXEC_INFO'])\n"
        "print(json.dumps({'apiVersion': info['apiVersion'], 'kind': 'ExecCredential',"
        " 'status': {'token': 'tok'}}))\n",
    )
    with connect(str(_exec_kubeconfig(tmp_path, script)), None) as cluster:
        assert cluster.host == "https://127.0.0.1:1"
        assert cluster.where is not None and cluster.where.user == "sso"


def test_the_clients_own_plugin_runs_are_bounded_too(tmp_path: Path) -> None:
    """The kubernetes client runs the plugin again (at load, and to refresh a credential): bounded."""
    from kubernetes.config import kube_config
    from kubernetes.config.config_exception import ConfigException

    from aicr_pytest.kube.kubeconfig import _bound_client_exec

    script = _plugin(tmp_path, "import time\ntime.sleep(60)\n")
    _bound_client_exec(0.5)
    try:
        node = kube_config.ConfigNode(
            "exec",
            {"command": sys.executable, "args": [script], "apiVersion": "client.authentication.k8s.io/v1"},
        )
        with pytest.raises(ConfigException, match=r"did not finish within 0.5s"):
            getattr(kube_config, "ExecProvider")(node, str(tmp_path)).run()  # noqa: B009
    finally:
        _bound_client_exec(20.0)
