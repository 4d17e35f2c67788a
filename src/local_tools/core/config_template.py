"""The commented `local-tools.toml` that `local-tools init` writes.

Every table of ``Config`` appears with its defaults, so the file loads back to them
(tests/core/test_config.py checks both); keep the two in step when a key is added.
"""

__all__ = ["TEMPLATE"]

TEMPLATE = """\
# local-tools configuration. Every key is optional: the values below are the
# defaults, and commented lines show what you can add. Docs: DESIGN.md §4.
#
# As a workspace's own file, it takes effect in full only once you trust the
# workspace (`local-tools trust`; an edit asks again). Until then only what narrows
# applies: deny and ask rules, [toolsets], a stricter [sandbox], smaller [limits].
# A file given by --config or $LOCAL_TOOLS_CONFIG is yours and always applies.

[workspace]
# root = "."                  # the jail; default: the workspace (--workspace or the
#                             # current directory); relative paths resolve against
#                             # this file's directory
extra_roots = []              # more allowed roots, read-only
writable_roots = []           # more allowed roots, writable

[permissions]
# permission = action | { pattern = action }; action is "allow", "deny" or "ask".
# Patterns: * any text, ? one character, matched against the whole subject;
# a trailing " *" is optional ("ls *" also matches bare "ls"). The last matching
# rule wins, and these rules come after the built-in defaults:
#   read:file = allow (but .env-style files ask), write:file = allow (.git/ asks),
#   delete:file = ask, network:outbound = ask, skill = allow,
#   execute:command = ask, except read-only commands (ls, cat, git status, rg, ...).
# Subjects: the workspace-relative path for *:file, each simple command for
# execute:command, the host for network:outbound, the skill's name for skill.
#
# "delete:file" = { "build/*" = "allow" }
# "execute:command" = { "git status*" = "allow", "pytest *" = "allow", "rm -rf *" = "deny" }
# "network:outbound" = { "*.python.org" = "allow" }

# Per-user rules, applied after [permissions]:
# [users.alice.permissions]
# "execute:command" = "deny"

[sandbox]                     # how exec_cmd confines commands (bubblewrap or Landlock)
mode = "workspace-write"      # off | read-only | workspace-write (roots + $TMPDIR)
network = false               # may sandboxed commands use the network

[network]                     # web_fetch, http_request, web_search
allow_private = []            # hosts or CIDRs exempt from the private-address guard,
#                             # e.g. ["localhost", "10.0.0.0/8"]; the default refuses
#                             # loopback, the LAN, link-local/metadata and the like
respect_robots = false        # web_fetch honours robots.txt when true
user_agent = ""               # "": local-tools/VERSION (an LLM agent's web tool; ...)
proxy = ""                    # an http(s) proxy for web tools; environment proxies are ignored

[network.search]              # web_search; the API key is read from the environment
provider = ""                 # searxng | brave | tavily | exa ("": web_search is unavailable)
url = ""                      # searxng: your instance, e.g. "http://127.0.0.1:8888";
#                             # others: the API endpoint when not the public one
api_key_env = ""              # "": BRAVE_API_KEY, TAVILY_API_KEY or EXA_API_KEY

[browser]                     # the browser_* tools (Playwright driving Chromium)
executable = ""               # "": /usr/bin/chromium, else chromium or chrome on PATH
headless = true               # false: a visible window (needs a display)
downloads = "downloads"       # the workspace folder a page's downloads land in
max_download_mb = 100         # a bigger download is cancelled

[knowledge]                   # the memory and project tools' store
url = ""                      # "": a SQLite file per workspace in the state folder;
#                             # "postgresql://user@host:5432/dbname": one database a team
#                             # shares (password from PGPASSWORD or ~/.pgpass, not here)
pg_schema = "public"          # PostgreSQL: the schema holding the tables (one per project)

[review]                      # review_* tools: the person passes, edits or comments
timeout = 3000                # seconds to wait for the answer; then the call is CANCELLED

[deploy]                      # copy_workspace_to_project
# Extensions copied (the default: web pages, styles, scripts, JSON, Markdown, images
# and fonts); anything else, source maps included, is reported and left out.
# extensions = [".html", ".css", ".js", ".json", ".md", ".png", ".woff2"]
protected = []                # target paths never deleted, besides .git/, README.md,
#                             # local-tools.toml and .local-tools/; globs, e.g. ["CNAME"]

[limits]
max_output_lines = 2000
max_output_bytes = 51200
exec_timeout = 60             # seconds, a command's default timeout (at most 600)
max_processes = 8             # commands running at once, background ones included

[toolsets]
enabled = ["*"]               # or names: files, search, shell, web, agent, memory, ...
disabled = []                 # toolsets to leave out even when enabled matches
profile = "core"              # what is listed to a model: core, full, browser, knowledge,
#                             # review, web, system, checkpoints, models, a [profiles]
#                             # name, or
#                             # several: "core,browser";
#                             # every enabled tool stays callable, find_tools loads more

# [profiles.frontend]         # a profile of your own: toolsets, tool names, globs, profiles
# tools = ["core", "browser", "http_request"]

[checkpoints]                 # every change a call makes, kept so it can be undone
enabled = true                # snapshots in a shadow git repository in the state folder
max_file_mb = 10              # larger files are left out of snapshots (and named)
keep_days = 14                # older checkpoints are dropped, then garbage-collected
max_size_mb = 2048            # past this the oldest are dropped too
watch = true                  # Linux: inotify, so a command's snapshot reads only changes

[lsp]                         # language servers: diagnostics after edits, the lsp tool
enabled = true                # false: no server is started (edits say "unavailable")
wait = 2.0                    # seconds an edit waits for a warm server's diagnostics (0-30)
start_timeout = 60            # seconds for a server to answer initialize
request_timeout = 30          # seconds for one lsp request (definition, references, ...)
idle_timeout = 600            # a server unused this long is stopped (started again on need)
max_open_documents = 64       # per server; the least recently used is closed past this
# Built in: basedpyright (else pyright) for Python, typescript-language-server for
# TypeScript/JavaScript, gopls, rust-analyzer, clangd, each when installed (`local-tools
# doctor` shows which). A table adds a server, or changes the built-in of that name
# (keys not given keep the built-in's). Servers run confined: read-only, no network.
# [lsp.gopls]
# command = "/opt/go/bin/gopls"
# [lsp.pyright]
# enabled = false
# [lsp.zls]
# command = "zls"
# args = []
# extensions = [".zig"]
# root_markers = ["build.zig", ".git"]
# env = { ZLS_LOG = "error" }
# init_options = {}
# settings = {}               # answered to its workspace/configuration requests

# task (subagents) and compact call a model you configure; without one they are not
# listed. The key is read from the named environment variable at call time, never stored.
#
# [models.local]              # Ollama, vLLM, LM Studio: OpenAI-compatible servers
# api = "openai"              # "openai" (Chat Completions) or "anthropic" (Messages)
# model = "qwen2.5-coder:7b"
# base_url = "http://127.0.0.1:11434/v1"   # a local address named here is allowed
# api_key_env = ""            # the variable holding the key; "": OPENAI_API_KEY /
#                             # ANTHROPIC_API_KEY for the provider's own endpoint, no key
#                             # for a base_url server
# max_tokens = 4096           # per reply
# timeout = 120               # seconds per request
# max_retries = 2             # 429 and 5xx, honouring Retry-After
# stream = true
# context_tokens = 128000
# encoding = "o200k_base"     # or cl100k_base: how tokens are counted
#
[task]                        # subagents
model = ""                    # a [models] name; "": the first [models] table
max_steps = 40                # model turns per task
max_tokens = 400000           # input + output tokens per task
max_seconds = 900             # wall time per task
max_concurrent = 4            # tasks at once, background ones included
max_depth = 1                 # 1: a subagent cannot start subagents
# [task.agents.reviewer]      # an agent of your own: the tools it may call, its prompt
# description = "Reviews a change for bugs"
# tools = ["read_file", "grep", "glob", "lsp"]   # toolsets, tools, globs, profiles
# prompt = "Review the change you are pointed at; report bugs with file:line."
# read_only = true            # refuse every call that would change something

[compact]
model = ""                    # "": [task] model
keep_recent_outputs = 3       # the newest tool outputs kept whole

[http]                        # `local-tools serve http` (the openlink extension, the console)
# Browser origins allowed to call it besides its own console page; * matches any text.
allowed_origins = ["chrome-extension://*", "moz-extension://*"]
"""
