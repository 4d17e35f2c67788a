"""The built-in permission rules, applied before the config's own (DESIGN §4)."""

from __future__ import annotations

from local_tools.core.config import CONFIG_FILENAME, Action

__all__ = ["DEFAULT_PERMISSIONS", "PROTECTED_PERMISSIONS", "SELF_PROTECTED_PATHS"]

# Built-in rules, in order (the last match wins). Conservative on purpose: only
# commands that cannot write or run other programs are allowed, and flags that
# would make them do so are sent back to ask.
DEFAULT_PERMISSIONS: dict[str, dict[str, Action]] = {
    "read:file": {"*": "allow"},
    "write:file": {"*": "allow"},
    "delete:file": {"*": "ask"},
    "network:outbound": {"*": "ask"},
    "execute:command": {
        "*": "ask",
        "ls *": "allow",
        "pwd *": "allow",
        "echo *": "allow",
        "cat *": "allow",
        "head *": "allow",
        "tail *": "allow",
        "wc *": "allow",
        "which *": "allow",
        "whoami": "allow",
        "date": "allow",
        "date -u": "allow",
        "date +*": "allow",
        "date -u +*": "allow",
        "date * -*": "ask",  # e.g. `date +%s -s ...` sets the clock
        "git status *": "allow",
        "git log *": "allow",
        "git diff *": "allow",
        "git show *": "allow",
        "git *--output*": "ask",  # log/diff/show --output=FILE writes a file
        "git branch": "allow",  # listing only: other forms create, move or delete
        "git branch -a": "allow",
        "git branch -r": "allow",
        "git branch -v": "allow",
        "git branch -vv": "allow",
        "git branch --show-current": "allow",
        "rg *": "allow",
        "rg *--pre*": "ask",  # runs a preprocessor command
        "rg *--hostname-bin*": "ask",  # runs a command
        "grep *": "allow",
        "*>*": "ask",  # a redirection writes a file
        "*.env": "ask",  # `cat .env` must not bypass the read:file rule
        "*.env *": "ask",
        "*.env.*": "ask",
    },
}

# Writing these would let an agent grant itself more than it was given: git config
# runs commands (core.fsmonitor) on an allowed `git status`, and the config and
# workspace plugins are loaded on the next start.
SELF_PROTECTED_PATHS: tuple[str, ...] = (
    ".git",
    ".git/*",
    "*/.git",
    "*/.git/*",
    CONFIG_FILENAME,
    ".local-tools",
    ".local-tools/*",
)

# Protections that a broad rule does not lift: the policy re-applies them after
# every config rule whose pattern starts with "*" (so `"write:file" = "allow"`
# keeps them), while a rule naming a path (`".git/*" = "allow"`) overrides them.
PROTECTED_PERMISSIONS: dict[str, dict[str, Action]] = {
    "read:file": {
        # .env-style secrets: a model reading them may leak them into a transcript.
        "*.env": "ask",
        ".env.*": "ask",
        "*/.env.*": "ask",
        "*.env.example": "allow",
        "*.env.sample": "allow",
        "*.env.template": "allow",
    },
    "write:file": dict.fromkeys(SELF_PROTECTED_PATHS, "ask"),
    "delete:file": dict.fromkeys(SELF_PROTECTED_PATHS, "ask"),
}
