"""The built-in permission rules, applied before the config's own (DESIGN §4)."""

from __future__ import annotations

from local_tools.core.config import CONFIG_FILENAME, Action

__all__ = ["DEFAULT_PERMISSIONS"]

# Built-in rules, in order (the last match wins). Conservative on purpose: only
# commands that cannot write or run other programs are allowed, and flags that
# would make them do so are sent back to ask.
DEFAULT_PERMISSIONS: dict[str, dict[str, Action]] = {
    "read:file": {
        "*": "allow",
        # .env-style secrets: a model reading them may leak them into a transcript.
        "*.env": "ask",
        ".env.*": "ask",
        "*/.env.*": "ask",
        "*.env.example": "allow",
        "*.env.sample": "allow",
        "*.env.template": "allow",
    },
    "write:file": {
        "*": "allow",
        # Writing these would let an agent grant itself more than it was given:
        # git config runs commands (core.fsmonitor) on an allowed `git status`,
        # and the config and workspace plugins are loaded on the next start.
        ".git": "ask",
        ".git/*": "ask",
        "*/.git": "ask",
        "*/.git/*": "ask",
        CONFIG_FILENAME: "ask",
        ".local-tools/*": "ask",
    },
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
