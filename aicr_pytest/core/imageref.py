"""Container image references, checked without a registry (pure).

Docker's reference grammar (``distribution/reference``): ``[host[:port]/]path[:tag][@digest]``,
path components lowercase ``[a-z0-9]`` joined by ``.``, ``_``, ``__`` or ``-``; a tag of at most 128
``[A-Za-z0-9_.-]`` not starting with ``.`` or ``-``; a digest ``<algorithm>:<hex>``.
:func:`is_image_reference` is what ``reference.ParseNormalizedNamed`` accepts: the name at most 255
characters, a known digest algorithm with its length of lowercase hex (``go-digest``), and not a
bare 64-hex image id.  A tag is optional (Docker then means ``:latest``).
"""

from __future__ import annotations

import re
from typing import Final

_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
_DOMAIN = r"[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?"
_HOST = rf"(?:{_DOMAIN}(?:\.{_DOMAIN})*|\[[0-9a-fA-F:]+\])(?::[0-9]+)?"
#: the whole grammar, with groups ``name``, ``host``, ``tag`` and ``digest``
REFERENCE_RE: Final = re.compile(
    rf"^(?P<name>(?:(?P<host>{_HOST})/)?{_COMPONENT}(?:/{_COMPONENT})*)"
    r"(?::(?P<tag>[\w][\w.-]{0,127}))?"
    r"(?:@(?P<digest>[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}))?$",
    re.ASCII,
)
MAX_NAME_LENGTH: Final = 255
#: ``go-digest``'s registered algorithms and the hex length of each
_DIGEST_HEX: Final = {"sha256": 64, "sha384": 96, "sha512": 128}
_IMAGE_ID: Final = re.compile(r"^[a-f0-9]{64}$")


def is_image_reference(text: str) -> bool:
    """Whether ``text`` (taken as given: surrounding whitespace makes it invalid) names an image."""
    match = REFERENCE_RE.match(text)
    if match is None or len(match.group("name")) > MAX_NAME_LENGTH or _IMAGE_ID.match(text):
        return False
    digest = match.group("digest")
    if digest:
        algorithm, _, hexpart = digest.partition(":")
        if _DIGEST_HEX.get(algorithm) != len(hexpart) or hexpart != hexpart.lower():
            return False
    return True


__all__ = ["MAX_NAME_LENGTH", "REFERENCE_RE", "is_image_reference"]
