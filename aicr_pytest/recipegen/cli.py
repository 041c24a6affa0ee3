"""``aicr-pytest recipe``: generate a ``RecipeResult`` from criteria, like ``aicr recipe``.

Criteria come from, lowest precedence first: a snapshot (``--snapshot``, detected), a criteria file
(``--criteria``, a ``RecipeCriteria``), and the flags.  ``--data DIR`` layers a data tree over the
embedded one; ``--no-embedded-data`` uses only ``DIR``.

This module owns the subcommand's run (:func:`run`); its flags are declared in the CLI's option
table, which hands :func:`run` the values (each single-value flag given at most once).  Importing
it is cheap: the generator, the snapshot model and the cluster facade are imported when the
command runs, and the facade only for ``cm://``.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from aicr_pytest.core.errors import UsageError
from aicr_pytest.core.inputfile import check_regular
from aicr_pytest.core.writable import check_writable

if TYPE_CHECKING:
    from aicr_pytest.core.datatree import DataTree
    from aicr_pytest.core.snapshot import Snapshot
    from aicr_pytest.kube import Cluster
    from aicr_pytest.recipegen.criteria import Criteria, CriteriaRegistry

PROG = "aicr-pytest recipe"
CRITERIA_KIND = "RecipeCriteria"
CRITERIA_API_VERSION = "aicr.run/v1alpha2"
MAX_CRITERIA_BYTES = 1 << 20

# Messages quoted from AICR where it has them.
#: a flag given with an empty value (a shell variable that was not set, say) is refused, not read as "any"
MSG_EMPTY_CRITERION = "--{field} must not be empty (leave it out to match any {field})"
MSG_NO_CRITERIA = (
    "no criteria provided: specify at least one of --service, --accelerator, --intent, --os, --platform, "
    "--nodes, --criteria, or use --snapshot to load from a snapshot file"
)
MSG_CRITERIA_KIND = 'criteria file {path}: invalid kind "{kind}", expected "RecipeCriteria"'
MSG_CRITERIA_API = 'criteria file {path}: invalid apiVersion "{api}", expected "aicr.run/v1alpha2"'
# Our own messages.
MSG_NO_EMBEDDED_NEEDS_DATA = (
    "--no-embedded-data needs --data DIR (the data tree to use instead of the embedded)"
)
MSG_CRITERIA_MISSING = "criteria file not found: {path}"
MSG_CRITERIA_UNREADABLE = "cannot read criteria file {path}: {error}"
MSG_CRITERIA_TOO_LARGE = "criteria file {path} is larger than the 1 MiB limit"
MSG_CRITERIA_INVALID = "criteria file {path}: {problem}"
MSG_CLUSTER_WRITE = "cannot write recipe to {uri}: {error}"


class _ClusterHandle:
    """Connects on first use (only ``cm://`` needs the cluster)."""

    def __init__(self, kubeconfig: str | None, context: str | None) -> None:
        self.kubeconfig, self.context = kubeconfig, context
        self._cluster: Cluster | None = None

    def get(self) -> Cluster:
        if self._cluster is None:
            from aicr_pytest.kube import connect
            from aicr_pytest.kube.reach import DEFAULT_REACH_TIMEOUT_S

            self._cluster = connect(self.kubeconfig, self.context, reach_timeout=DEFAULT_REACH_TIMEOUT_S)
        return self._cluster

    def read_configmap(self, namespace: str, name: str) -> dict[str, str]:
        return self.get().read_configmap(namespace, name)

    def write_configmap(self, namespace: str, name: str, obj: dict[str, Any]) -> None:
        from aicr_pytest.kube import ApiError

        uri = f"cm://{namespace}/{name}"
        try:
            self.get().apply(obj)
        except ApiError as exc:
            lines = str(exc).strip().splitlines()
            error = lines[0] if lines else type(exc).__name__
            raise UsageError(MSG_CLUSTER_WRITE.format(uri=uri, error=error)) from None

    def close(self) -> None:
        if self._cluster is not None:
            self._cluster.close()


def data_tree(data: str | None, no_embedded: bool) -> DataTree:
    """The embedded tree under ``--data``, or (``--no-embedded-data``) ``--data`` alone."""
    from aicr_pytest.core.datatree import (
        MSG_DATA_DIR_MISSING,
        MSG_DATA_DIR_NO_REGISTRY,
        REGISTRY_PATH,
        DataTree,
    )

    if not no_embedded:
        return DataTree.default(Path(data) if data else None)
    if not data:
        raise UsageError(MSG_NO_EMBEDDED_NEEDS_DATA)
    root = Path(data).expanduser()
    if not root.is_dir():
        raise UsageError(MSG_DATA_DIR_MISSING.format(path=data))
    check_regular(root / REGISTRY_PATH, "--data file")
    if not (root / REGISTRY_PATH).is_file():
        raise UsageError(MSG_DATA_DIR_NO_REGISTRY.format(path=data))
    return DataTree(root)


def load_criteria_file(path: str, registry: CriteriaRegistry, base: Criteria) -> Criteria:
    """Apply a ``RecipeCriteria`` file over ``base`` (its set dimensions win)."""
    from aicr_pytest.core.sources import parse_yaml_document
    from aicr_pytest.recipegen import criteria as crit
    from aicr_pytest.recipegen.spec import DecodeError, decode_criteria, load_text

    file = Path(path).expanduser()
    if not file.is_file():
        raise UsageError(MSG_CRITERIA_MISSING.format(path=path))
    try:
        with file.open("rb") as fh:
            body = fh.read(MAX_CRITERIA_BYTES + 1)
    except OSError as exc:
        raise UsageError(MSG_CRITERIA_UNREADABLE.format(path=path, error=exc.strerror or exc)) from None
    if len(body) > MAX_CRITERIA_BYTES:
        raise UsageError(MSG_CRITERIA_TOO_LARGE.format(path=path))
    parse_yaml_document(body, path, kind="criteria file")  # syntax and "is a mapping" checks
    doc = load_text(body)
    kind = doc.get("kind")
    if kind not in (None, "", CRITERIA_KIND):
        raise UsageError(MSG_CRITERIA_KIND.format(path=path, kind=kind))
    api = doc.get("apiVersion")
    if api not in (None, "", CRITERIA_API_VERSION):
        raise UsageError(MSG_CRITERIA_API.format(path=path, api=api))
    try:
        spec = decode_criteria(doc.get("spec"), "spec")
        return crit.build(
            registry,
            base,
            **{f: getattr(spec, f) for f in crit.FIELDS},
            nodes=spec.nodes,
        )
    except (DecodeError, UsageError) as exc:
        raise UsageError(MSG_CRITERIA_INVALID.format(path=path, problem=exc)) from None


def load_snapshot(source: str, cluster: _ClusterHandle) -> Snapshot:
    from aicr_pytest.core.snapshot import load_snapshot_text
    from aicr_pytest.core.sources import load_source

    body, label = load_source(source, kind="snapshot", configmap_reader=cluster.read_configmap)
    fmt = "json" if label.lower().endswith(".json") else None
    return load_snapshot_text(body, label, format=fmt)


def _say(stderr: TextIO, message: str) -> None:
    print(f"{PROG}: {message}", file=stderr)


def run(args: Mapping[str, Any], stdout: TextIO | None = None, stderr: TextIO | None = None) -> int:
    """Run ``aicr-pytest recipe``; returns 0, or raises :class:`UsageError` (exit 2)."""
    from aicr_pytest.recipegen import criteria as crit
    from aicr_pytest.recipegen.build import generate
    from aicr_pytest.recipegen.detect import detect_criteria, snapshot_evaluator
    from aicr_pytest.recipegen.output import parse_format, write
    from aicr_pytest.recipegen.store import load_store

    out = stdout or sys.stdout
    err = stderr or sys.stderr
    fmt = parse_format(args["format"] or "yaml")
    target = (args["output"] or "").strip()
    if target not in ("", "-") and not target.startswith("cm://"):
        check_writable(target, "--output")  # before any work (a snapshot read, a cluster)
    data = data_tree(args["data"], bool(args["no_embedded_data"]))
    store = load_store(data)
    cluster = _ClusterHandle(args["kubeconfig"], args["kube_context"])
    try:
        query = crit.Criteria()
        evaluate = None
        if args["snapshot"] is not None:
            snapshot = load_snapshot(args["snapshot"], cluster)
            query = detect_criteria(snapshot, store.registry)
            evaluate = snapshot_evaluator(snapshot)
            _say(err, f"criteria detected from the snapshot: {query.describe()}")
        if args["criteria"] is not None:
            query = load_criteria_file(args["criteria"], store.registry, query)
        for f in crit.FIELDS:
            if args[f] is not None and not str(args[f]).strip():
                raise UsageError(MSG_EMPTY_CRITERION.format(field=f))
        query = crit.build(
            store.registry,
            query,
            **{f: args[f] for f in crit.FIELDS},
            nodes=args["nodes"],
        )
        if evaluate is None and query.specificity() == 0:
            raise UsageError(MSG_NO_CRITERIA)
        result = generate(store, data, query, evaluate)
        for note in result.warnings:
            _say(err, f"warning: {note}")
        for w in result.constraint_warnings:
            _say(err, f"overlay {w['overlay']} left out: {w['constraint']} {w['reason']}")
        where = write(
            result.document, fmt, args["output"], stdout=out, configmap_writer=cluster.write_configmap
        )
        components = len(result.document["componentRefs"])
        _say(
            err,
            f"recipe for {query.describe()}: {components} components, overlays {', '.join(result.applied)}"
            + ("" if where == "-" else f"; written to {where}"),
        )
        return 0
    finally:
        cluster.close()


__all__ = ["data_tree", "load_criteria_file", "run"]
