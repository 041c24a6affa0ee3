"""``--history cm://NAMESPACE/NAME``: the run history as a bounded ring of ConfigMaps in the cluster
(the layout and the pure parts: :mod:`aicr_pytest.report.cmhistory`).

:class:`ConfigMapHistory` offers what :class:`~aicr_pytest.report.history.SqliteHistory` offers
(``add``, ``runs``, ``last_passing``) through the cluster client.  A run is created part by part
(``create``: two runs that pick the same place in the ring cannot overwrite each other — the second
takes the next place); once it is all there, the runs older than ``--history-keep`` are deleted.
An API error is a one-line :class:`~aicr_pytest.core.errors.UsageError`.
"""

from __future__ import annotations

from typing import Any, Final

from aicr_pytest.core.errors import UsageError
from aicr_pytest.kube.client import Cluster
from aicr_pytest.kube.errors import ApiError, Conflict
from aicr_pytest.report import cmhistory as cmh
from aicr_pytest.report.history import RunRecord

MSG_API: Final = "{option} {target}: {why}"
_TRIES: Final = 5


class ConfigMapHistory:
    """The ring ``cm://namespace/name`` on ``cluster``."""

    def __init__(
        self, cluster: Cluster, target: str, keep: int = cmh.DEFAULT_KEEP, option: str = "--history"
    ):
        self.cluster = cluster
        self.target = target
        self.namespace, self.name = cmh.parse_target(target, option)
        self.keep = cmh.check_keep(keep)
        self.option = option

    def _error(self, err: Exception) -> UsageError:
        return UsageError(MSG_API.format(option=self.option, target=self.target, why=err))

    def objects(self) -> list[dict[str, Any]]:
        try:
            return list(
                self.cluster.list(
                    "v1", "ConfigMap", self.namespace, label_selector=f"{cmh.HISTORY_LABEL}={self.name}"
                )
            )
        except ApiError as err:
            raise self._error(err) from None

    def add(self, record: RunRecord) -> None:
        """Write the run (all its parts), then prune the ring to ``keep`` runs."""
        seq = cmh.next_seq(self.objects())
        for _ in range(_TRIES):
            parts = cmh.run_objects(self.namespace, self.name, record, seq)
            try:
                self.cluster.create(parts[0])
            except Conflict:  # another run took this place in the ring
                seq += 1
                continue
            except ApiError as err:
                raise self._error(err) from None
            try:
                for part in parts[1:]:
                    self.cluster.create(part)
            except ApiError as err:
                raise self._error(err) from None
            break
        else:
            raise self._error(RuntimeError(f"no free place in the ring after {_TRIES} tries"))
        for name in cmh.to_prune(self.objects(), self.keep):
            try:
                self.cluster.delete(
                    "v1", "ConfigMap", name, self.namespace, propagation="Background", missing_ok=True
                )
            except ApiError as err:
                raise self._error(err) from None

    def runs(self, *, last: int | None = None, check: str | None = None) -> list[RunRecord]:
        records = cmh.records_of(self.objects())
        if check:
            records = [r for r in records if any(m.check == check for m in r.measurements)]
        return records[-last:] if last else records

    def last_passing(self, recipe_fp: str, cluster_fp: str) -> RunRecord | None:
        for record in reversed(self.runs()):
            ident = record.identity
            if record.passed and ident.recipe_fp == recipe_fp and ident.cluster_fp == cluster_fp:
                return record
        return None

    def close(self) -> None:
        """Nothing to close (the same surface as the SQLite store)."""

    def __enter__(self) -> ConfigMapHistory:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


__all__ = ["ConfigMapHistory"]
