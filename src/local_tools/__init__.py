"""local-tools: a secure tool runtime for LLM agents.

from local_tools import Toolbox
tb = Toolbox("path/to/workspace")
tb.run("read_file", {"path": "README.md"})
"""

from __future__ import annotations

from local_tools.core.context import ToolContext
from local_tools.core.errors import ErrorCode, ToolError
from local_tools.core.tool import Args, Hints, Tool, tool
from local_tools.toolbox import Toolbox

__all__ = ["Args", "ErrorCode", "Hints", "Tool", "ToolContext", "ToolError", "Toolbox", "tool"]
__version__ = "0.1.0"
