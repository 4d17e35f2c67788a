"""The built-in tools, one module each."""

from __future__ import annotations

from local_tools.core.tool import Tool

__all__ = ["builtin_tools"]


def builtin_tools() -> list[Tool]:
    from local_tools.tools.add_component import add_component
    from local_tools.tools.add_feature import add_feature
    from local_tools.tools.apply_patch import apply_patch
    from local_tools.tools.batch import batch
    from local_tools.tools.browser_click import browser_click
    from local_tools.tools.browser_evaluate import browser_evaluate
    from local_tools.tools.browser_get_dom import browser_get_dom
    from local_tools.tools.browser_get_state import browser_get_state
    from local_tools.tools.browser_go_back import browser_go_back
    from local_tools.tools.browser_go_forward import browser_go_forward
    from local_tools.tools.browser_hover import browser_hover
    from local_tools.tools.browser_launch import browser_launch
    from local_tools.tools.browser_navigate import browser_navigate
    from local_tools.tools.browser_press_key import browser_press_key
    from local_tools.tools.browser_reload import browser_reload
    from local_tools.tools.browser_screenshot import browser_screenshot
    from local_tools.tools.browser_scroll import browser_scroll
    from local_tools.tools.browser_snapshot import browser_snapshot
    from local_tools.tools.browser_type import browser_type
    from local_tools.tools.browser_wait_for import browser_wait_for
    from local_tools.tools.call_tool import call_tool
    from local_tools.tools.check_data_format import check_data_format
    from local_tools.tools.check_feature_coverage import check_feature_coverage
    from local_tools.tools.check_task_dependencies import check_task_dependencies
    from local_tools.tools.checkpoint_diff import checkpoint_diff
    from local_tools.tools.checkpoint_list import checkpoint_list
    from local_tools.tools.compact import compact
    from local_tools.tools.copy_workspace_to_project import copy_workspace_to_project
    from local_tools.tools.create_requirement import create_requirement
    from local_tools.tools.create_task import create_task
    from local_tools.tools.delete_project_item import delete_project_item
    from local_tools.tools.edit import edit
    from local_tools.tools.exec_cmd import exec_cmd
    from local_tools.tools.export_knowledge import export_knowledge
    from local_tools.tools.file_copy import file_copy
    from local_tools.tools.file_delete import file_delete
    from local_tools.tools.file_move import file_move
    from local_tools.tools.file_stat import file_stat
    from local_tools.tools.find_tools import find_tools
    from local_tools.tools.get_design_document import get_design_document
    from local_tools.tools.get_implementation_plan import get_implementation_plan
    from local_tools.tools.get_requirements import get_requirements
    from local_tools.tools.glob import glob
    from local_tools.tools.grep import grep
    from local_tools.tools.http_request import http_request
    from local_tools.tools.import_knowledge import import_knowledge
    from local_tools.tools.invalid import invalid
    from local_tools.tools.list_dir import list_dir
    from local_tools.tools.lsp import lsp
    from local_tools.tools.memory import memory
    from local_tools.tools.multi_edit import multi_edit
    from local_tools.tools.open_in_folder import open_in_folder
    from local_tools.tools.process_input import process_input
    from local_tools.tools.process_kill import process_kill
    from local_tools.tools.process_list import process_list
    from local_tools.tools.process_output import process_output
    from local_tools.tools.promote_memory import (
        promote_memory,
        promote_to_decision,
        promote_to_pattern,
    )
    from local_tools.tools.query_memory import query_memory
    from local_tools.tools.question import question
    from local_tools.tools.read_file import read_file
    from local_tools.tools.read_many_files import read_many_files
    from local_tools.tools.restore import restore
    from local_tools.tools.review_and_edit_content import review_and_edit_content
    from local_tools.tools.review_and_edit_file import review_and_edit_file
    from local_tools.tools.review_with_feedback_content import review_with_feedback_content
    from local_tools.tools.review_with_feedback_file import review_with_feedback_file
    from local_tools.tools.save_memory import save_insight, save_issue, save_learning, save_memory
    from local_tools.tools.screenshot import screenshot
    from local_tools.tools.skill import skill
    from local_tools.tools.task import task
    from local_tools.tools.todo_read import todo_read
    from local_tools.tools.todo_write import todo_write
    from local_tools.tools.update_feature_status import update_feature_status
    from local_tools.tools.update_task_status import update_task_status
    from local_tools.tools.web_fetch import web_fetch
    from local_tools.tools.web_search import web_search
    from local_tools.tools.write_file import write_file

    return [
        read_file,
        read_many_files,
        write_file,
        edit,
        multi_edit,
        apply_patch,
        list_dir,
        file_stat,
        file_delete,
        file_move,
        file_copy,
        glob,
        grep,
        lsp,
        exec_cmd,
        process_output,
        process_input,
        process_kill,
        process_list,
        checkpoint_list,
        checkpoint_diff,
        restore,
        web_fetch,
        http_request,
        web_search,
        question,
        todo_write,
        todo_read,
        skill,
        task,
        compact,
        find_tools,
        call_tool,
        save_memory,
        save_insight,
        save_issue,
        save_learning,
        query_memory,
        promote_memory,
        promote_to_decision,
        promote_to_pattern,
        memory,
        create_requirement,
        get_requirements,
        add_feature,
        update_feature_status,
        add_component,
        create_task,
        update_task_status,
        delete_project_item,
        get_implementation_plan,
        get_design_document,
        check_feature_coverage,
        check_task_dependencies,
        check_data_format,
        export_knowledge,
        import_knowledge,
        browser_launch,
        browser_navigate,
        browser_snapshot,
        browser_click,
        browser_type,
        browser_scroll,
        browser_hover,
        browser_press_key,
        browser_screenshot,
        browser_get_dom,
        browser_evaluate,
        browser_wait_for,
        browser_go_back,
        browser_go_forward,
        browser_reload,
        browser_get_state,
        screenshot,
        open_in_folder,
        review_and_edit_file,
        review_with_feedback_file,
        review_and_edit_content,
        review_with_feedback_content,
        copy_workspace_to_project,
        batch,
        invalid,
    ]
