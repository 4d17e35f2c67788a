"""The ``local-tools`` command: call, list, schema, log, doctor, init, trust, token, serve.

Thin: parse arguments, build a Toolbox, print. Exit codes for ``call``: 0 success,
1 tool error, 2 usage error (bad arguments, bad config).
"""

from __future__ import annotations

import argparse
import errno
import json
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from local_tools.core.config import ConfigError, default_config_toml
from local_tools.core.errors import ToolError
from local_tools.core.registry import DuplicateToolError, PluginError
from local_tools.transports import cli_checkpoints, token_command
from local_tools.transports.schemas import FORMATS, tool_schemas

__all__ = ["main"]

EXIT_OK, EXIT_TOOL_ERROR, EXIT_USAGE = 0, 1, 2


class UsageError(Exception):
    pass


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    ns = _parse_command_line(parser, argv)
    if not getattr(ns, "command", None):
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    try:
        return int(ns.handler(ns))
    except (UsageError, ConfigError, DuplicateToolError, PluginError) as exc:
        print(f"local-tools: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except ToolError as exc:  # the workspace itself is unusable (missing root, ...)
        print(f"local-tools: {exc.message}", file=sys.stderr)
        return EXIT_USAGE
    except BrokenPipeError:  # `local-tools list | head`: the reader left early
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK


def _parse_command_line(
    parser: argparse.ArgumentParser, argv: Sequence[str] | None
) -> argparse.Namespace:
    """Parse, letting `call`'s KEY=VALUE pairs and its options come in any order.

    argparse ends a positional list at the first option, so `call read_file --text path=a`
    leaves `path=a` over; for `call`, what is left over and is not an option is a pair.
    (parse_intermixed_args does not work with subcommands.)
    """
    ns, extras = parser.parse_known_args(argv)
    if extras and getattr(ns, "command", None) == "call":
        options = [arg for arg in extras if arg.startswith("-")]
        if not options:
            ns.pairs = [*ns.pairs, *extras]
            extras = []
    if extras:
        parser.error(f"unrecognized arguments: {' '.join(extras)}")
    return ns


def _parser() -> argparse.ArgumentParser:
    from local_tools import __version__

    parser = argparse.ArgumentParser(
        prog="local-tools", description="A secure tool runtime for LLM agents."
    )
    parser.add_argument("--version", action="version", version=f"local-tools {__version__}")
    _add_common(parser, None)
    # The same flags after the subcommand; SUPPRESS keeps a flag given before the
    # subcommand from being reset to None by the subparser's default.
    common = argparse.ArgumentParser(add_help=False)
    _add_common(common, argparse.SUPPRESS)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    call = sub.add_parser("call", parents=[common], help="call a tool, print the envelope")
    call.add_argument("tool")
    call.add_argument("pairs", nargs="*", metavar="KEY=VALUE", help="arguments")
    call.add_argument("--json", dest="args_json", help="arguments as a JSON object")
    call.add_argument("--user", default="default", help="user id for permissions and audit")
    call.add_argument("--text", action="store_true", help="print what a model reads instead")
    call.set_defaults(handler=_cmd_call)

    lst = sub.add_parser("list", parents=[common], help="tools, toolsets and aliases")
    lst.add_argument("--json", action="store_true")
    _add_profile(lst)
    lst.set_defaults(handler=_cmd_list)

    schema = sub.add_parser("schema", parents=[common], help="tool schemas for model APIs")
    schema.add_argument("--format", choices=FORMATS, default="openai")
    _add_profile(schema)
    schema.set_defaults(handler=_cmd_schema)

    logp = sub.add_parser("log", parents=[common], help="recent calls from the audit log")
    logp.add_argument("--tool")
    logp.add_argument("--user")
    logp.add_argument("--outcome", choices=("success", "error"))
    logp.add_argument("--limit", type=int, default=20)
    logp.add_argument("--json", action="store_true")
    logp.set_defaults(handler=_cmd_log)

    doctor = sub.add_parser("doctor", parents=[common], help="what this machine supports")
    doctor.set_defaults(handler=_cmd_doctor)

    init = sub.add_parser("init", parents=[common], help="write a commented local-tools.toml")
    init.add_argument("--force", action="store_true", help="replace an existing file")
    init.set_defaults(handler=_cmd_init)

    trust = sub.add_parser(
        "trust", parents=[common], help="let a workspace's own config and tools take effect"
    )
    trust.add_argument("--yes", "-y", action="store_true", help="do not ask for confirmation")
    trust.add_argument("--list", action="store_true", help="the trusted workspaces")
    trust.add_argument("--revoke", action="store_true", help="stop trusting the workspace")
    trust.set_defaults(handler=_cmd_trust)
    token_command.add_parser(sub)
    cli_checkpoints.add_parsers(sub, common)
    sub.choices["checkpoints"].set_defaults(handler=_cmd_checkpoints)
    sub.choices["undo"].set_defaults(handler=_cmd_undo)

    serve = sub.add_parser("serve", help="serve the tools to other programs")
    servers = serve.add_subparsers(dest="server", metavar="SERVER", required=True)
    mcp = servers.add_parser("mcp", parents=[common], help="an MCP server (stdio or HTTP)")
    mcp.add_argument("--transport", choices=("stdio", "http"), default="stdio")
    mcp.add_argument("--host", default="127.0.0.1", help="HTTP bind address (default loopback)")
    mcp.add_argument("--port", type=int, default=39528, help="HTTP port (default 39528)")
    _add_profile(mcp)
    mcp.set_defaults(handler=_cmd_serve_mcp)
    http = servers.add_parser(
        "http", parents=[common], help="the HTTP server for the openlink extension and the console"
    )
    http.add_argument("--host", default="127.0.0.1", help="bind address (default loopback)")
    http.add_argument("--port", type=int, default=39527, help="port (default 39527; 0: any free)")
    _add_profile(http)
    http.set_defaults(handler=_cmd_serve_http)
    return parser


def _add_profile(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--profile",
        help="the tools listed to a model: core (default), full, browser, knowledge, review, "
        "web, system, checkpoints, one of [profiles], or several joined by commas",
    )


def _add_common(parser: argparse.ArgumentParser, default: Any) -> None:
    parser.add_argument(
        "--workspace", "-w", default=default, help="workspace root (default: current directory)"
    )
    parser.add_argument("--config", "-c", default=default, help="local-tools.toml to use")


def _toolbox(ns: argparse.Namespace, *, interactive: bool = False) -> Any:
    from local_tools.interact.terminal import TerminalAsker
    from local_tools.toolbox import Toolbox

    asker = TerminalAsker() if interactive and TerminalAsker.available() else None
    profile = getattr(ns, "profile", None)
    tb = Toolbox(ns.workspace, ns.config, asker=asker, profile=profile)
    notice = tb.trust_notice()
    if notice and asker is not None:  # a person at the terminal: offer trust on first use
        from local_tools.transports.cli_trust import offer_trust

        if offer_trust(notice, Path(ns.workspace or "."), tb.state_dir, sys.stdin, sys.stderr):
            tb.close()
            tb = Toolbox(ns.workspace, ns.config, asker=asker, profile=profile)
    return tb


def _parse_args(ns: argparse.Namespace, string_fields: set[str]) -> dict[str, Any]:
    args: dict[str, Any] = {}
    if ns.args_json:
        try:
            loaded = json.loads(ns.args_json)
        except json.JSONDecodeError as exc:
            raise UsageError(f"--json is not valid JSON: {exc}") from None
        if not isinstance(loaded, dict):
            raise UsageError("--json must be a JSON object")
        args.update(loaded)
    for pair in ns.pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise UsageError(f"expected KEY=VALUE, got {pair!r}")
        args[key] = value if key in string_fields else _json_or_text(value)
    return args


def _json_or_text(value: str) -> Any:
    """`limit=10` is a number and `recursive=true` a bool; anything else stays text."""
    try:
        return json.loads(value)
    except json.JSONDecodeError:
        return value


def _cmd_call(ns: argparse.Namespace) -> int:
    with _toolbox(ns, interactive=True) as tb:
        found = tb.registry.resolve(ns.tool)
        string_fields = {
            name
            for name, prop in (found.parameters["properties"].items() if found else ())
            if prop.get("type") == "string"
        }
        envelope = tb.run(ns.tool, _parse_args(ns, string_fields), user_id=ns.user, transport="cli")
        if ns.text:
            print(tb.render(envelope))
        else:
            print(json.dumps(envelope, indent=2, ensure_ascii=False))
    return EXIT_OK if envelope["success"] else EXIT_TOOL_ERROR


def _cmd_list(ns: argparse.Namespace) -> int:
    with _toolbox(ns) as tb:
        tools = tb.tools()
        for failure in tb.registry.failures:  # stderr: `list --json` stays one JSON value
            print(f"local-tools: not loaded: {failure}", file=sys.stderr)
        notice = tb.trust_notice()
        if notice:
            print(f"local-tools: {notice}", file=sys.stderr)
        if ns.json:
            print(json.dumps(tools, indent=2, ensure_ascii=False))
            return EXIT_OK
        by_set: dict[str, list[dict[str, Any]]] = {}
        width = max((len(t["permission"] or "-") for t in tools), default=1)
        for t in tools:
            by_set.setdefault(t["toolset"], []).append(t)
        for toolset, members in sorted(by_set.items()):
            print(f"[{toolset}]")
            for t in members:
                aliases = f"  (aliases: {', '.join(t['aliases'])})" if t["aliases"] else ""
                first = _summary(t["description"])
                print(f"  {t['name']:<16} {t['permission'] or '-':<{width}} {first}{aliases}")
        hidden = len(tb.listed(profile="full")) - len(tools)
        if hidden > 0:
            print(
                f"\n{len(tools)} tools listed by the profile {tb.profile.name!r}; {hidden} more "
                "are callable by name and found with find_tools (--profile full lists them)."
            )
    return EXIT_OK


def _summary(description: str, width: int = 60) -> str:
    """The first paragraph on one line, cut to `width` characters."""
    text = " ".join(description.split("\n\n")[0].split())
    return text if len(text) <= width else text[: width - 1].rstrip() + "…"


def _cmd_schema(ns: argparse.Namespace) -> int:
    with _toolbox(ns) as tb:
        print(json.dumps(tool_schemas(tb.listed(), ns.format), indent=2, ensure_ascii=False))
    return EXIT_OK


def _cmd_log(ns: argparse.Namespace) -> int:
    with _toolbox(ns) as tb:
        if tb.audit is None:
            raise UsageError("the audit log is disabled")
        records = tb.audit.query(tool=ns.tool, user=ns.user, outcome=ns.outcome, limit=ns.limit)
    if ns.json:
        print(json.dumps([r.__dict__ for r in records], indent=2, ensure_ascii=False))
        return EXIT_OK
    if not records:
        print("(no calls logged yet)")
    from local_tools.interact.terminal import safe_text

    for r in records:
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(r.ts))
        outcome = r.outcome if r.outcome == "success" else f"error {r.error_code}"
        args = json.dumps(r.args, ensure_ascii=False)
        args = args if len(args) <= 80 else args[:77] + "..."
        # Every column escaped: a user id, tool name or argument could carry terminal
        # escape sequences (erase lines, set the clipboard) into the person's terminal.
        user, name, outcome, args = (safe_text(str(v)) for v in (r.user_id, r.tool, outcome, args))
        print(f"{when}  {user:<10} {name:<14} {outcome:<22} {r.duration_ms:8.1f} ms  {args}")
    return EXIT_OK


def _cmd_doctor(ns: argparse.Namespace) -> int:
    from local_tools.doctor import diagnose

    with _toolbox(ns) as tb:
        for name, value in diagnose(tb):
            print(f"{name:<16} {value}")
    return EXIT_OK


def _cmd_serve_mcp(ns: argparse.Namespace) -> int:
    import asyncio

    # Deferred: the MCP SDK takes about a second to import; no other command pays it.
    from local_tools.transports.mcp import LocalToolsMcp, serve_stdio
    from local_tools.transports.mcp_http import serve_http

    # stderr: on stdio, stdout is the protocol.
    _print_startup_notice(
        ns,
        "" if ns.workspace else " (the current directory, used when the MCP client names no root)",
    )
    # A broken config or unknown profile is logged at start and reported per call.
    app = LocalToolsMcp(ns.workspace, ns.config, profile=ns.profile)
    try:
        if ns.transport == "http":
            asyncio.run(serve_http(app, ns.host, ns.port))
        else:
            asyncio.run(serve_stdio(app))
    except KeyboardInterrupt:
        pass
    return EXIT_OK


def _cmd_serve_http(ns: argparse.Namespace) -> int:
    # Deferred: Starlette and uvicorn are imported only by the server.
    from local_tools.transports.http_server import serve

    _print_startup_notice(ns, "")
    try:
        serve(ns.workspace, ns.config, host=ns.host, port=ns.port, profile=ns.profile)
    except OSError as exc:
        if exc.errno in (errno.EADDRINUSE, errno.EACCES, errno.EADDRNOTAVAIL):
            raise UsageError(
                f"cannot listen on {ns.host}:{ns.port}: {exc.strerror} "
                "(another local-tools or openlink server? pass --port)"
            ) from None
        raise
    except KeyboardInterrupt:
        pass
    return EXIT_OK


def _print_startup_notice(ns: argparse.Namespace, where: str) -> None:
    """What the server leaves out of an untrusted workspace, before it starts (stderr)."""
    from local_tools.core.state import default_state_dir
    from local_tools.transports.cli_trust import startup_notice

    notice = startup_notice(ns.workspace, bool(ns.config), default_state_dir())
    if notice:
        print(f"local-tools{where}: {notice}", file=sys.stderr, flush=True)


def _cmd_checkpoints(ns: argparse.Namespace) -> int:
    with _toolbox(ns) as tb:
        return cli_checkpoints.run_checkpoints(tb, ns)


def _cmd_undo(ns: argparse.Namespace) -> int:
    with _toolbox(ns) as tb:
        return cli_checkpoints.run_undo(tb, ns)


def _cmd_trust(ns: argparse.Namespace) -> int:
    from local_tools.core.state import default_state_dir
    from local_tools.transports.cli_trust import list_trusted, run_trust

    if ns.list:
        return list_trusted(default_state_dir(), sys.stdout)
    code, error = run_trust(
        ns.workspace,
        default_state_dir(),
        yes=ns.yes,
        revoke=ns.revoke,
        out=sys.stdout,
        err=sys.stderr,
        stdin=sys.stdin,
    )
    if error:
        raise UsageError(error)
    return code


def _cmd_init(ns: argparse.Namespace) -> int:
    target = Path(ns.config) if ns.config else Path(ns.workspace or ".") / "local-tools.toml"
    if target.exists() and not ns.force:
        raise UsageError(f"{target} already exists (use --force to replace it)")
    try:
        target.write_text(default_config_toml(), encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"cannot write {target}: {exc.strerror or exc}") from None
    print(f"wrote {target}")
    if not ns.config:  # the workspace's own file: what widens waits for the user's trust
        from local_tools.core.trust import trust_command

        print(
            f"settings in it that widen access apply once you run: {trust_command(target.parent)}"
        )
    return EXIT_OK
