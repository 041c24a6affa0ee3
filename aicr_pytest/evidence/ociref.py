"""OCI references (``[oci://]registry/repo[:tag][@sha256:…]``) and the derived push tag."""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from aicr_pytest.core.errors import UsageError
from aicr_pytest.evidence.canonical import is_sha256_digest

_HOST = re.compile(
    r"^[a-zA-Z0-9]([a-zA-Z0-9-]*[a-zA-Z0-9])?(\.[a-zA-Z0-9]([a-zA-Z0-9-]*[a-zA-Z0-9])?)*(:[0-9]+)?$"
)
_REPO = re.compile(r"^[a-z0-9]+([._-][a-z0-9]+)*(/[a-z0-9]+([._-][a-z0-9]+)*)*$")
_TAG = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$")
DOCKER_HUB = "docker.io"
DOCKER_HUB_API = "registry-1.docker.io"


@dataclass(frozen=True)
class Reference:
    registry: str
    repository: str
    tag: str = ""
    digest: str = ""

    @property
    def name(self) -> str:
        """``registry/repository`` (no tag, no digest)."""
        return f"{self.registry}/{self.repository}"

    @property
    def api_host(self) -> str:
        return DOCKER_HUB_API if self.registry == DOCKER_HUB else self.registry

    def with_tag(self, tag: str) -> Reference:
        return replace(self, tag=tag)

    def with_digest(self, digest: str) -> Reference:
        return replace(self, digest=digest)

    def __str__(self) -> str:
        out = self.name
        if self.tag:
            out += ":" + self.tag
        if self.digest:
            out += "@" + self.digest
        return out


def looks_like_reference(text: str) -> bool:
    """Bare ref shape: ``first/…`` where ``first`` has ``.`` or ``:`` or is ``localhost``."""
    if not text or any(c.isspace() for c in text) or "/" not in text:
        return False
    first = text.split("/", 1)[0]
    if first in (".", ".."):
        return False
    return "." in first or ":" in first or first == "localhost"


def parse(text: str) -> Reference:
    """Parse with Docker's rules; :class:`UsageError` (one line) when it is not a valid reference."""
    raw = text.strip()
    body = raw.removeprefix("oci://")
    if not body or any(c.isspace() for c in body):
        raise UsageError(f"invalid OCI reference {text!r}")
    rest, at, digest = body.partition("@")
    if at and not is_sha256_digest(digest):
        raise UsageError(f"invalid OCI reference {text!r}: digest must be sha256:<64 lowercase hex>")
    tag = ""
    slash = rest.rfind("/")
    colon = rest.rfind(":")
    if colon > slash:
        rest, tag = rest[:colon], rest[colon + 1 :]
        if not _TAG.match(tag):
            raise UsageError(f"invalid OCI reference {text!r}: invalid tag {tag!r}")
    first, sep, remainder = rest.partition("/")
    if sep and ("." in first or ":" in first or first == "localhost"):
        registry, repository = first, remainder
    else:
        registry, repository = DOCKER_HUB, rest
    if registry == DOCKER_HUB and "/" not in repository:
        repository = "library/" + repository
    if not _HOST.match(registry):
        raise UsageError(f"invalid OCI reference {text!r}: invalid registry host {registry!r}")
    if not _REPO.match(repository):
        raise UsageError(
            f"invalid OCI reference {text!r}: invalid repository {repository!r} "
            "(lowercase letters, digits, ._-/)"
        )
    return Reference(registry, repository, tag, digest if at else "")


def slug(name: str) -> str:
    """Tag-safe recipe slug: lower-case, ``[a-z0-9_.-]`` only, trimmed, at most 80 characters."""
    out = re.sub(r"[^a-z0-9_.-]", "-", name.lower()).strip("-.")
    out = out[:80].strip("-.")
    return out or "recipe"


def derived_tag(recipe_name: str, manifest_digest: str) -> str:
    """``<recipe-slug>-<first 12 hex of the manifest digest>`` (just the slug without a digest)."""
    hexpart = manifest_digest.removeprefix("sha256:")[:12]
    return f"{slug(recipe_name)}-{hexpart}" if hexpart else slug(recipe_name)
