"""The built-in tools, one module each."""

from __future__ import annotations

from local_tools.core.tool import Tool

__all__ = ["builtin_tools"]


def builtin_tools() -> list[Tool]:
    from local_tools.tools.apply_patch import apply_patch
    from local_tools.tools.edit import edit
    from local_tools.tools.file_delete import file_delete
    from local_tools.tools.file_stat import file_stat
    from local_tools.tools.invalid import invalid
    from local_tools.tools.list_dir import list_dir
    from local_tools.tools.multi_edit import multi_edit
    from local_tools.tools.read_file import read_file
    from local_tools.tools.write_file import write_file

    return [
        read_file,
        write_file,
        edit,
        multi_edit,
        apply_patch,
        list_dir,
        file_stat,
        file_delete,
        invalid,
    ]
