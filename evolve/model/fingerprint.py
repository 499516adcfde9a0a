"""The digest a checkpoint's identity is made of."""

from __future__ import annotations

import hashlib
import json


def fingerprint(data: object) -> str:
    """A stable digest of JSON-able data (a problem document, the options that matter, a
    family's settings): what a checkpoint's identity is made of."""
    text = json.dumps(data, sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()
