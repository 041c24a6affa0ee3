"""PATCH bodies: JSON merge patch, (a subset of) strategic merge patch, JSON patch.

* ``application/merge-patch+json`` -- RFC 7386: maps merge recursively, ``null`` deletes a key,
  any other value (lists included) replaces.
* ``application/strategic-merge-patch+json`` -- Kubernetes' strategic merge patch for built-in
  types (https://github.com/kubernetes/community/blob/master/contributors/devel/sig-api-machinery/strategic-merge-patch.md).
  This fake implements the part our checks rely on: merge-patch behaviour for maps, plus lists
  merged by their ``patchMergeKey`` for the well-known fields in :data:`MERGE_KEYS` (containers
  and env by ``name``, conditions by ``type``, ...), ``metadata.finalizers`` merged as a set,
  the ``$patch: delete`` / ``$patch: replace`` directives, ``$deleteFromPrimitiveList/<field>``,
  and ``$setElementOrder``/``$retainKeys`` accepted and ignored. Known gaps: merge keys are
  looked up by field *name* rather than from the OpenAPI schema, so an unrelated field that
  happens to share a name gets the same strategy; ``$retainKeys`` is not enforced.
* ``application/json-patch+json`` -- RFC 6902 (add, remove, replace, move, copy, test).
"""

from __future__ import annotations

import copy
from typing import Any

__all__ = ["MERGE_KEYS", "PatchError", "json_merge_patch", "json_patch", "strategic_merge_patch"]


class PatchError(ValueError):
    """The patch is malformed or a JSON-patch ``test`` failed (the server answers 422/400)."""


# Field name -> patchMergeKey for lists that strategic merge patch merges instead of replacing.
MERGE_KEYS: dict[str, str] = {
    "containers": "name",
    "initContainers": "name",
    "ephemeralContainers": "name",
    "env": "name",
    "volumes": "name",
    "volumeMounts": "mountPath",
    "volumeDevices": "devicePath",
    "ports": "containerPort",
    "imagePullSecrets": "name",
    "conditions": "type",
    "containerStatuses": "name",
    "initContainerStatuses": "name",
    "ownerReferences": "uid",
    "hostAliases": "ip",
    "addresses": "type",
    "taints": "key",
    "resourceClaims": "name",
}
# Lists of scalars merged as sets.
SET_LISTS = frozenset({"finalizers"})


def json_merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result: dict[str, Any] = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = json_merge_patch(result.get(key), value)
    return result


def _merge_list(field: str, original: list[Any], patch: list[Any]) -> list[Any]:
    key = MERGE_KEYS.get(field)
    if field in SET_LISTS:
        out = list(original)
        for item in patch:
            if item not in out:
                out.append(item)
        return out
    if key is None or not all(isinstance(i, dict) for i in patch):
        # Replace: for lists without a merge key, or `$patch: replace` lists.
        return [copy.deepcopy(i) for i in patch if not (isinstance(i, dict) and i.get("$patch") == "replace")]
    if any(isinstance(i, dict) and i.get("$patch") == "replace" for i in patch):
        return [copy.deepcopy(i) for i in patch if i.get("$patch") != "replace"]
    out = [copy.deepcopy(i) for i in original]
    for item in patch:
        if key not in item:
            raise PatchError(f"map: {item} does not contain declared merge key: {key}")
        idx = next(
            (n for n, cur in enumerate(out) if isinstance(cur, dict) and cur.get(key) == item[key]), None
        )
        if item.get("$patch") == "delete":
            if idx is not None:
                del out[idx]
            continue
        if idx is None:
            out.append(_strip_directives(item))
        else:
            out[idx] = strategic_merge_patch(out[idx], item)
    return out


def _strip_directives(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _strip_directives(v) for k, v in value.items() if not k.startswith("$")}
    if isinstance(value, list):
        return [_strip_directives(v) for v in value]
    return value


def strategic_merge_patch(target: Any, patch: Any) -> Any:
    """Apply a strategic merge patch (subset; see the module docstring)."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    if patch.get("$patch") == "replace":
        return _strip_directives(patch)
    if patch.get("$patch") == "delete":
        return None
    result: dict[str, Any] = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if key.startswith("$deleteFromPrimitiveList/"):
            field = key.split("/", 1)[1]
            result[field] = [v for v in result.get(field) or [] if v not in (value or [])]
            continue
        if key.startswith("$"):  # $setElementOrder/..., $retainKeys, $patch
            continue
        if value is None:
            result.pop(key, None)
        elif isinstance(value, list) and isinstance(result.get(key), list):
            result[key] = _merge_list(key, result[key], value)
        elif isinstance(value, list):
            result[key] = _merge_list(key, [], value)
        elif isinstance(value, dict):
            merged = strategic_merge_patch(result.get(key), value)
            if merged is None:
                result.pop(key, None)
            else:
                result[key] = merged
        else:
            result[key] = value
    return result


def _pointer(path: str) -> list[str]:
    if path == "":
        return []
    if not path.startswith("/"):
        raise PatchError(f"invalid JSON pointer {path!r}")
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def _walk(doc: Any, parts: list[str]) -> Any:
    cur = doc
    for p in parts:
        if isinstance(cur, list):
            try:
                cur = cur[int(p)]
            except (ValueError, IndexError) as exc:
                raise PatchError(f"index {p} out of range") from exc
        elif isinstance(cur, dict):
            if p not in cur:
                raise PatchError(f"path component {p!r} not found")
            cur = cur[p]
        else:
            raise PatchError(f"cannot traverse into {type(cur).__name__}")
    return cur


def _add(doc: Any, parts: list[str], value: Any) -> Any:
    if not parts:
        return value
    parent = _walk(doc, parts[:-1])
    last = parts[-1]
    if isinstance(parent, list):
        if last == "-":
            parent.append(value)
        else:
            idx = int(last)
            if idx > len(parent):
                raise PatchError(f"index {idx} out of range")
            parent.insert(idx, value)
    elif isinstance(parent, dict):
        parent[last] = value
    else:
        raise PatchError("add target is not a container")
    return doc


def _remove(doc: Any, parts: list[str]) -> Any:
    if not parts:
        raise PatchError("cannot remove the whole document")
    parent = _walk(doc, parts[:-1])
    last = parts[-1]
    try:
        if isinstance(parent, list):
            del parent[int(last)]
        else:
            del parent[last]
    except (KeyError, IndexError, ValueError) as exc:
        raise PatchError(f"remove: path {'/'.join(parts)} does not exist") from exc
    return doc


def json_patch(doc: Any, ops: Any) -> Any:
    """RFC 6902 JSON patch."""
    if not isinstance(ops, list):
        raise PatchError("a JSON patch must be a list of operations")
    result = copy.deepcopy(doc)
    for op in ops:
        if not isinstance(op, dict) or "op" not in op or "path" not in op:
            raise PatchError(f"invalid operation {op!r}")
        kind, parts = op["op"], _pointer(op["path"])
        if kind == "add":
            result = _add(result, parts, copy.deepcopy(op.get("value")))
        elif kind == "remove":
            result = _remove(result, parts)
        elif kind == "replace":
            _walk(result, parts)  # must exist
            result = _remove(result, parts) if parts else result
            result = _add(result, parts, copy.deepcopy(op.get("value")))
        elif kind in ("move", "copy"):
            src = _pointer(op.get("from", ""))
            value = copy.deepcopy(_walk(result, src))
            if kind == "move":
                result = _remove(result, src)
            result = _add(result, parts, value)
        elif kind == "test":
            if _walk(result, parts) != op.get("value"):
                raise PatchError(f"test operation failed at {op['path']}")
        else:
            raise PatchError(f"unknown JSON patch operation {kind!r}")
    return result
