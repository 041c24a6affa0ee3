"""``ApiError``: an error the API server answers with a ``Status`` object."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from aicr_pytest.testing.resources import ResourceType
from aicr_pytest.testing.store.objects import Obj


class ApiError(Exception):
    """An error the API server answers with a ``Status`` object (``kind: Status``)."""

    def __init__(
        self,
        code: int,
        reason: str,
        message: str,
        details: Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = dict(details or {})
        self.headers = dict(headers or {})

    def status(self) -> Obj:
        body: Obj = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        }
        if self.details:
            body["details"] = self.details
        return body

    # -- constructors matching k8s.io/apimachinery/pkg/api/errors ---------------------------------
    @classmethod
    def not_found(cls, rt: ResourceType | str, name: str, group: str = "") -> ApiError:
        res, grp = (rt.group_resource, rt.group) if isinstance(rt, ResourceType) else (rt, group)
        plural = rt.plural if isinstance(rt, ResourceType) else rt
        details: Obj = {"name": name, "kind": plural}
        if grp:
            details["group"] = grp
        return cls(404, "NotFound", f'{res} "{name}" not found', details)

    @classmethod
    def already_exists(cls, rt: ResourceType, name: str) -> ApiError:
        details: Obj = {"name": name, "kind": rt.plural}
        if rt.group:
            details["group"] = rt.group
        return cls(409, "AlreadyExists", f'{rt.group_resource} "{name}" already exists', details)

    @classmethod
    def conflict(cls, rt: ResourceType, name: str, why: str) -> ApiError:
        details: Obj = {"name": name, "kind": rt.plural}
        if rt.group:
            details["group"] = rt.group
        return cls(
            409, "Conflict", f'Operation cannot be fulfilled on {rt.group_resource} "{name}": {why}', details
        )

    @classmethod
    def bad_request(cls, message: str) -> ApiError:
        return cls(400, "BadRequest", message)

    @classmethod
    def invalid(cls, rt: ResourceType, name: str, field: str, detail: str) -> ApiError:
        details: Obj = {
            "name": name,
            "kind": rt.kind,
            "causes": [{"reason": "FieldValueInvalid", "message": detail, "field": field}],
        }
        if rt.group:
            details["group"] = rt.group
        return cls(422, "Invalid", f'{rt.kind} "{name}" is invalid: {field}: {detail}', details)

    @classmethod
    def forbidden(cls, rt: ResourceType, name: str, why: str) -> ApiError:
        details: Obj = {"name": name, "kind": rt.plural}
        if rt.group:
            details["group"] = rt.group
        return cls(403, "Forbidden", f'{rt.group_resource} "{name}" is forbidden: {why}', details)

    @classmethod
    def gone(cls, message: str) -> ApiError:
        return cls(410, "Expired", message)
