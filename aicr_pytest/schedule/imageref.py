"""The runner's container image reference, checked before anything is applied (pure).

Docker's reference grammar (``distribution/reference``): ``[host[:port]/]path[:tag][@digest]``,
path components lowercase ``[a-z0-9]`` joined by ``.``, ``_``, ``__`` or ``-``; a tag of at most 128
``[A-Za-z0-9_.-]`` not starting with ``.`` or ``-``; a digest ``sha256:`` and 64 lowercase hex
digits.  A digest pins the image: :func:`parse_image` keeps it as given, and the pod then pulls
only if the image is not present (a tag alone may move, so it is pulled every time).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

from aicr_pytest.core.errors import UsageError
from aicr_pytest.core.imageref import MAX_NAME_LENGTH, REFERENCE_RE

_SHA256: Final = re.compile(r"^sha256:[0-9a-f]{64}$")
MSG_BAD_IMAGE: Final = (
    "--image {image!r} is not an image reference ([registry/]repository[:tag][@sha256:digest])"
)
MSG_BAD_DIGEST: Final = "--image {image!r}: the digest must be sha256: and 64 lowercase hex digits"
MSG_NO_TAG: Final = (
    "--image {image!r}: give a tag or a digest (an image without one means :latest, which moves)"
)


@dataclass(frozen=True)
class Image:
    reference: str
    name: str
    tag: str
    digest: str

    @property
    def pinned(self) -> bool:
        return bool(self.digest)

    @property
    def pull_policy(self) -> str:
        return "IfNotPresent" if self.pinned else "Always"


def parse_image(text: str) -> Image:
    """The image ``text`` names; :class:`UsageError` (one line) when it is not a valid reference."""
    ref = text.strip()
    match = REFERENCE_RE.match(ref)
    if not ref or match is None or len(match.group("name")) > MAX_NAME_LENGTH:
        raise UsageError(MSG_BAD_IMAGE.format(image=text))
    digest = match.group("digest") or ""
    if digest and not _SHA256.match(digest):
        raise UsageError(MSG_BAD_DIGEST.format(image=text))
    tag = match.group("tag") or ""
    if not tag and not digest:
        raise UsageError(MSG_NO_TAG.format(image=text))
    return Image(ref, match.group("name"), tag, digest)


__all__ = ["MSG_BAD_DIGEST", "MSG_BAD_IMAGE", "MSG_NO_TAG", "Image", "parse_image"]
