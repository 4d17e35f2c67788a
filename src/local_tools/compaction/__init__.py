"""Compaction: shrink a conversation (OpenAI or Anthropic message format) to a token
budget. Old tool outputs become stubs saved to a spill file; a configured model
summarizes what still does not fit. The `compact` tool is tools/compact.py."""

from __future__ import annotations

from local_tools.compaction.engine import Options, compact
from local_tools.compaction.formats import Conversation, parse
from local_tools.compaction.summary import Summarizer

__all__ = ["Conversation", "Options", "Summarizer", "compact", "parse"]
