"""Token counts of messages by OpenAI's encodings (cl100k_base / o200k_base).

A message costs the tokens of its JSON text; an image a fixed IMAGE_TOKENS (what a
provider charges depends on its size, never on its base64 text, which would count
hundreds of thousands).
"""

from __future__ import annotations

import json
from typing import Any

from local_tools.compaction.formats import IMAGE_TYPES
from local_tools.models.tokens import count_tokens

__all__ = ["IMAGE_TOKENS", "count_text", "message_tokens"]

IMAGE_TOKENS = 1000


def count_text(text: str, encoding: str) -> int:
    """Tokens of `text` by `encoding` (the models engine's counter: one cached encoder)."""
    return count_tokens(text, encoding)


def _without_images(value: Any) -> tuple[Any, int]:
    """`value` with each image block replaced by a marker, and how many there were."""
    if isinstance(value, dict):
        if value.get("type") in IMAGE_TYPES:
            return {"type": value["type"]}, 1
        images = 0
        out: dict[str, Any] = {}
        for key, item in value.items():
            out[key], n = _without_images(item)
            images += n
        return out, images
    if isinstance(value, list):
        items = []
        images = 0
        for item in value:
            plain, n = _without_images(item)
            items.append(plain)
            images += n
        return items, images
    return value, 0


def message_tokens(message: Any, encoding: str) -> int:
    plain, images = _without_images(message)
    text = json.dumps(plain, ensure_ascii=False, separators=(",", ":"))
    return count_text(text, encoding) + images * IMAGE_TOKENS
