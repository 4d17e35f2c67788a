"""File search for the glob and grep tools: ripgrep, or a pure-Python engine that agrees.

- `engine`: which engine runs (`LOCAL_TOOLS_SEARCH_ENGINE`), `engine_info()` for doctor,
  uncapped `fallback_grep` / `fallback_glob` for benchmarks and equivalence tests;
- `ripgrep`: finding rg and running it (bounded, killed on cancel);
- `grep_fallback`, `walk`, `regex_translate`: the pure-Python engine;
- `glob_match`, `ignore`: globs and ignore files with ripgrep's rules;
- `scope`, `results`, `newest`: what is searched, and the newest-first, capped answers;
- `grep_single`: grep's one streamed rg pass (counting first only for huge outputs).
"""

from local_tools.search.engine import (
    ENGINE_ENV,
    engine_info,
    fallback_glob,
    fallback_grep,
    get_engine,
    rg_path,
    rg_walk_flags,
)

__all__ = [
    "ENGINE_ENV",
    "engine_info",
    "fallback_glob",
    "fallback_grep",
    "get_engine",
    "rg_path",
    "rg_walk_flags",
]
