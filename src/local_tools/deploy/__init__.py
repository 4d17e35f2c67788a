"""Promote a workspace folder into a project folder: plan, then stage and swap.

``plan`` decides (what to delete, copy, keep and skip) without touching anything;
``apply`` builds the planned tree next to the target and swaps it in with one
atomic rename, so the target is always the old tree or the planned one.
"""

from local_tools.deploy.apply import apply_plan, clean_leftovers
from local_tools.deploy.plan import FIXED_PROTECTED, Plan, make_plan

__all__ = ["FIXED_PROTECTED", "Plan", "apply_plan", "clean_leftovers", "make_plan"]
