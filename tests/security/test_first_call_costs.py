"""What the first call no longer pays for, with the guarantees kept: the TLS context is
built only for https (and still verifies), the sandbox engine can be detected ahead in a
thread (one probe, the same answer), libc is found without spawning ldconfig."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent.parent

HTTP_THEN_HTTPS = textwrap.dedent(
    """
    import asyncio, sys
    sys.path.insert(0, sys.argv[1])
    import net_server
    from local_tools.core.errors import NetworkError
    from local_tools.security import net, net_transport

    server = net_server.serve("127.0.0.2")
    server.routes["/ok"] = net_server.html("<p>fine</p>")
    guard = net.Guard(["127.0.0.2"])
    try:
        got = asyncio.run(net.request("GET", f"http://127.0.0.2:{server.port}/ok",
                                      guard=guard, timeout=5))
        assert got.status_code == 200 and b"fine" in got.content
        print("after http", net_transport._ssl_context.cache_info().currsize)
        try:  # an http server: the TLS handshake fails, but it was attempted
            asyncio.run(net.request("GET", f"https://127.0.0.2:{server.port}/ok",
                                    guard=guard, timeout=5))
        except NetworkError as exc:
            print("https refused", exc.details.get("cause"))
        print("after https", net_transport._ssl_context.cache_info().currsize)
    finally:
        server.stop()
    """
)


def test_tls_context_only_for_https() -> None:
    done = subprocess.run(
        [sys.executable, "-c", HTTP_THEN_HTTPS, str(HERE)],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert "after http 0" in lines  # a plain-http fetch never loaded the CA bundle
    assert "after https 1" in lines  # the https attempt went through the verifying context
    assert any(line.startswith("https refused") for line in lines)


WARM_UP = textwrap.dedent(
    """
    import subprocess
    from local_tools.security import sandbox

    probes = []
    real = sandbox.detect_engine
    def counted(forced=None):
        probes.append(forced)
        return real(forced)
    sandbox.detect_engine = counted
    sandbox.warm_up()
    sandbox.warm_up()  # once per process
    engine = sandbox.sandbox_engine()  # waits for the warm-up's answer
    assert sandbox.sandbox_engine() is engine
    print(len(probes), engine.name, real().name)
    """
)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="engines are Linux only")
def test_warm_up_probes_once_and_gives_the_same_engine() -> None:
    env = {k: v for k, v in os.environ.items() if k != "LOCAL_TOOLS_SANDBOX_ENGINE"}
    done = subprocess.run(
        [sys.executable, "-c", WARM_UP], capture_output=True, text=True, timeout=120,
        check=False, env=env,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    count, warmed, fresh = done.stdout.split()
    assert count == "1"
    assert warmed == fresh  # the same engine a probe now finds


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inotify is Linux only")
def test_libc_found_without_ldconfig(tmp_path: Path) -> None:
    script = textwrap.dedent(
        """
        import ctypes.util, os, sys
        def refuse(name):
            raise AssertionError("find_library spawned ldconfig")
        ctypes.util.find_library = refuse
        from local_tools.checkpoints.watch import _libc
        libc = _libc()
        fd = libc.init1(os.O_CLOEXEC)
        assert fd >= 0, ctypes.get_errno()
        wd = libc.add_watch(fd, sys.argv[1].encode(), 0x100)  # IN_CREATE
        assert wd >= 0, ctypes.get_errno()
        os.close(fd)
        print("ok")
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path)], capture_output=True, text=True,
        timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"
