"""Promote a workspace folder into a project folder: plan, then stage and swap.

``plan`` decides (what to delete, copy, keep and skip) without touching anything;
``apply`` builds the planned tree next to the target and swaps it in with one
atomic rename, so the target is always the old tree or the planned one. Both work
only through directory descriptors (``tree``): a symlink swapped in anywhere, at any
moment, is never followed.
"""

from local_tools.deploy.apply import apply_plan, clean_leftovers
from local_tools.deploy.plan import FIXED_PROTECTED, Plan, make_plan
from local_tools.deploy.tree import NotRegular

__all__ = ["FIXED_PROTECTED", "NotRegular", "Plan", "apply_plan", "clean_leftovers", "make_plan"]
