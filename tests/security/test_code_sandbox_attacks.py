"""Student programs are hostile: each attack of the code-sandbox audit, run in the sandbox,
is contained. CoEval survives, the machine's files do not change, no secret is readable or
recorded in clear, nothing the program started outlives its verdict, and what it writes is
read through a cap."""

from __future__ import annotations

import os
import secrets
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from coeval.config.credentials import register_secret
from coeval_benchmarks.sandbox.run import ExecutionLimits, ExecutionResult, run_python

from tests.benchmarks.test_code_sandbox import _evaluate, _fenced, _items

LIMITS = ExecutionLimits(timeout_s=2.0)
HONEST = "\ndef add_one(x):\n    return x + 1\n\nassert add_one(1) == 2\n"


def _run(program: str, limits: ExecutionLimits = LIMITS) -> ExecutionResult:
    return run_python(program, limits)


def _marked(marker: str) -> list[int]:
    """Live host processes whose name (``/proc/PID/comm``) is ``marker``: a killed one may
    show a moment longer as dead (``X``) or a zombie (``Z``), running nothing."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if not entry.name.isdigit() or (entry / "comm").read_text().strip() != marker:
                continue
            state = (entry / "stat").read_text().rpartition(")")[2].split()[0]
        except (OSError, IndexError):
            continue
        if state not in ("X", "Z"):
            found.append(int(entry.name))
    return found


def _left(marker: str, grace_s: float = 3.0) -> list[int]:
    """:func:`_marked` once the kernel has had ``grace_s`` to tear down the killed namespace:
    its processes are sent SIGKILL when the sandbox ends and run no more code, but on a busy
    machine a fork bomb's hundreds take a moment to exit."""
    deadline = time.monotonic() + grace_s
    while (found := _marked(marker)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return found


def _mark(marker: str) -> str:
    """Program text naming the current process ``marker``, as the host sees it."""
    return f"open('/proc/self/comm', 'w').write({marker!r})\n"


def _snapshot(folder: Path) -> dict[str, tuple[bytes, int]]:
    return {str(p.relative_to(folder)): (p.read_bytes() if p.is_file() else b"", p.stat().st_mode)
            for p in sorted(folder.rglob("*"))}


@pytest.fixture
def sentinel() -> Iterator[subprocess.Popen[bytes]]:
    """A process of the same user outside the sandbox, which no program may kill."""
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    yield proc
    proc.kill()
    proc.wait()


def test_a_program_cannot_signal_coeval_or_anything_outside(sentinel: subprocess.Popen[bytes]) -> None:
    me = os.getpid()
    attacks = [
        "import os, signal\nsignal.pidfd_send_signal(os.pidfd_open(os.getppid()), signal.SIGKILL)\n",
        f"import os, signal\nsignal.pidfd_send_signal(os.pidfd_open({me}), signal.SIGKILL)\n",
        f"import os, signal\nos.kill({sentinel.pid}, signal.SIGKILL)\n",
        "import os, signal\nos.kill(-1, signal.SIGKILL)\n",
    ]
    for attack in attacks:
        result = _run(attack + HONEST)
        assert result.status in ("passed", "failed")
        assert sentinel.poll() is None  # this test's process lives too, or the test would not go on
    # the sandbox's own init ignores the signal: the program goes on and its tests still decide
    assert _run(attacks[0] + HONEST).status == "passed"


def test_writes_deletes_and_renames_outside_through_dir_fd_touch_nothing(tmp_path: Path) -> None:
    (tmp_path / "victim.txt").write_text("keep me")
    before = _snapshot(tmp_path)
    folder = str(tmp_path)
    attacks = [
        f"import os\nfd = os.open({folder!r}, os.O_RDONLY)\nos.close(os.open('new.txt', os.O_CREAT | os.O_WRONLY, dir_fd=fd))\n",
        f"import os\nfd = os.open({folder!r}, os.O_RDONLY)\nos.unlink('victim.txt', dir_fd=fd)\n",
        f"import os\nfd = os.open({folder!r}, os.O_RDONLY)\nos.rename('victim.txt', 'moved.txt', src_dir_fd=fd, dst_dir_fd=fd)\n",
        f"import sqlite3\nsqlite3.connect({folder + '/x.db'!r}).execute('create table t (x)')\n",
        f"import os\nos.mkfifo({folder + '/fifo'!r})\n",
        f"import os\nos.setxattr({folder + '/victim.txt'!r}, 'user.owned', b'1')\n",
        f"open({folder + '/victim.txt'!r}, 'a').write('forged')\n",
    ]
    for attack in attacks:
        result = _run(attack + HONEST)
        assert result.status == "failed", (attack, result)
        assert "FileNotFoundError" in result.error or "unable to open database file" in result.error, result
    assert _snapshot(tmp_path) == before
    assert os.listxattr(tmp_path / "victim.txt") == []
    # inside its own tmpfs the same calls work, and vanish with the sandbox
    inside = ("import os, sqlite3\nos.mkfifo('fifo')\nsqlite3.connect('x.db').execute('create table t (x)')\n"
              "fd = os.open('.', os.O_RDONLY)\nos.close(os.open('n', os.O_CREAT | os.O_WRONLY, dir_fd=fd))\n")
    assert _run(inside + HONEST).status == "passed"


def test_no_audit_hook_to_switch_off_and_native_code_reaches_nothing(tmp_path: Path,
                                                                     sentinel: subprocess.Popen[bytes]) -> None:
    target = tmp_path / "shell-was-here"
    attacks = [
        # the old in-process hook trusted __main__'s globals; there is no hook left to fool
        "import sys\nsys.modules['__main__'].__dict__.clear()\n",
        f"import ctypes\nctypes.CDLL(None).kill({sentinel.pid}, 9)\n",
        f"import os\nos.kill({sentinel.pid}, 9)\n",
        f"import os\nif os.fork() == 0:\n    open({str(target)!r}, 'w')\n    os._exit(0)\nos.wait()\n",
        # a shell with no bypass at all: it runs, inside, and reaches nothing outside
        "import _posixsubprocess, os\nr, w = os.pipe()\n"
        f"pid = _posixsubprocess.fork_exec([b'/bin/sh', b'-c', b'touch ran; touch {target}'], [b'/bin/sh'], True,"
        " (w,), None, None, -1, -1, -1, -1, -1, -1, r, w, True, False, -1, None, None, None, -1, None, False)\n"
        "os.waitpid(pid, 0)\nassert os.path.exists('ran')\n",
        f"import subprocess\nsubprocess.run(['/bin/sh', '-c', 'touch {target}'], check=True)\n",
    ]
    results = [_run(attack + HONEST) for attack in attacks]
    assert [r.status for r in results] == ["passed", "passed", "failed", "passed", "passed", "failed"], results
    assert not target.exists() and sentinel.poll() is None


def test_the_process_limit_holds_and_fork_bombs_end_with_the_verdict() -> None:
    no_fork = _run("import os\nos.fork()\n" + HONEST, ExecutionLimits(timeout_s=2.0, processes=1))
    assert no_fork.status == "failed" and "BlockingIOError" in no_fork.error
    counted = ("import os, time\nforks = 0\nwhile True:\n    try:\n        if os.fork() == 0:\n"
               "            time.sleep(30)\n            os._exit(0)\n        forks += 1\n    except OSError:\n"
               "        break\nassert forks == 14, forks\n")  # 16 tasks, the sandbox's init and the harness two
    assert _run(counted + HONEST).status == "passed"
    marker = "cv-bomb-" + secrets.token_hex(3)
    bomb = f"import os\n{_mark(marker)}while True:\n    try:\n        os.fork()\n    except OSError:\n        pass\n"
    started = time.monotonic()
    result = _run(bomb + HONEST)
    assert result.status == "timeout"
    assert time.monotonic() - started < LIMITS.wall_seconds + 2
    assert _left(marker) == []


@pytest.mark.parametrize("closes_stderr", [False, True])
def test_a_grandchild_neither_delays_the_verdict_nor_survives_it(closes_stderr: bool) -> None:
    marker = "cv-gc-" + secrets.token_hex(3)
    grandchild = (
        "import os, time\n"
        "if os.fork() == 0:\n"
        "    os.setsid()\n"
        "    if os.fork() == 0:\n"
        f"        {_mark(marker).strip()}\n"
        + ("        os.close(2); os.close(1)\n" if closes_stderr else "")
        + "        time.sleep(60)\n"
        "    os._exit(0)\n"
        "time.sleep(0.3)\n"
    )
    started = time.monotonic()
    result = _run(grandchild + HONEST)
    assert result.status == "passed"
    assert time.monotonic() - started < LIMITS.timeout_s
    assert _left(marker) == []


def test_gigabytes_on_stderr_are_counted_not_kept() -> None:
    """200 MB to stderr (well over the 64 KiB kept): the parent's peak memory stays low."""
    child = (
        "import resource\n"
        "from coeval_benchmarks.sandbox.run import ExecutionLimits, run_python\n"
        "before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
        "r = run_python('import os\\nfor _ in range(3200):\\n    os.write(2, b\"x\" * 65536)\\nassert 0\\n',"
        " ExecutionLimits(timeout_s=20.0))\n"
        "print(r.status, r.stderr_bytes, len(r.error), resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before)\n"
    )
    out = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True, timeout=120, check=True)
    status, stderr_bytes, error_chars, grown_kib = out.stdout.split()
    assert status == "failed" and 3200 * 65536 < int(stderr_bytes) < 3200 * 65536 + 1000  # and the traceback
    assert int(error_chars) <= 2010
    assert int(grown_kib) < 32 * 1024  # the peak grew by less than 32 MB for 200 MB read


def test_the_keys_file_is_not_there_and_secrets_are_masked_in_the_record(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    key = "sk-test-" + secrets.token_hex(16)
    env_secret = "envsecret-" + secrets.token_hex(12)
    (tmp_path / ".coeval").mkdir()
    (tmp_path / ".coeval" / "keys.yaml").write_text(f"providers:\n  openai: {key}\n")
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("COEVAL_TEST_API_TOKEN", env_secret)
    register_secret(key)
    add_one = _items()[0]
    readers = [
        f"print(open({str(tmp_path / '.coeval' / 'keys.yaml')!r}).read())\n",
        "import os\nprint(open(os.path.expanduser('~/.coeval/keys.yaml')).read())\n",
        "import os, sys\nsys.stderr.write(repr(dict(os.environ)))\nassert 'COEVAL_TEST_API_TOKEN' in os.environ\n",
        # a program that knows the secrets already (in its own text) and prints them
        f"import sys\nsys.stderr.write({key!r} + ' ' + {env_secret!r})\nraise SystemExit(3)\n",
    ]
    results, fields = _evaluate(add_one, [_fenced(r + "def add_one(x):\n    return x + 1\n") for r in readers])
    assert results == [{"pass@1": 0.0}] * 4
    errors = [f["execution"]["error"] for f in fields]
    assert "FileNotFoundError" in errors[0] and "FileNotFoundError" in errors[1]
    assert "AssertionError" in errors[2]
    assert "***" in errors[3]
    for error in errors:
        assert key not in error and key[:12] not in error and env_secret not in error


@pytest.fixture
def unix_listeners(tmp_path: Path) -> Iterator[tuple[str, str, list[bytes]]]:
    """A unix socket on a path and one in the abstract namespace, recording what reaches them."""
    path = str(tmp_path / "s.sock")
    abstract = "\0coeval-test-" + secrets.token_hex(4)
    got: list[bytes] = []
    servers = []
    for address in (path, abstract):
        server = socket.socket(socket.AF_UNIX)
        server.bind(address)
        server.listen()
        server.settimeout(0.2)
        servers.append(server)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            for server in servers:
                try:
                    conn, _ = server.accept()
                except OSError:
                    continue
                got.append(conn.recv(100) or b"(connected)")
                conn.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield path, abstract, got
    stop.set()
    thread.join()
    for server in servers:
        server.close()


def test_unix_sockets_are_out_of_reach(unix_listeners: tuple[str, str, list[bytes]]) -> None:
    path, abstract, got = unix_listeners
    for address in (path, abstract):
        attack = f"import socket\ns = socket.socket(socket.AF_UNIX)\ns.connect({address!r})\ns.sendall(b'leaked')\n"
        result = _run(attack + HONEST)
        assert result.status == "failed" and result.network_isolated and result.sandbox == "bubblewrap"
        assert "FileNotFoundError" in result.error or "ConnectionRefusedError" in result.error
    time.sleep(0.5)
    assert got == []


def test_an_exit_of_any_kind_before_the_tests_end_fails() -> None:
    add_one = _items()[0]
    body = "def add_one(x):\n    return x + 2\n"  # wrong: only an exit could make it pass
    exits = ["import sys\nsys.exit(0)\n", "exit()\n", "raise SystemExit\n", "import os\nos._exit(0)\n",
             "quit(0)\n", "import os, signal\nos.kill(os.getpid(), signal.SIGTERM)\n"]
    answers = [_fenced(body + e) for e in exits]
    results, fields = _evaluate(add_one, answers)
    assert results == [{"pass@1": 0.0}] * len(exits)
    assert [f["execution"]["status"] for f in fields] == ["failed"] * len(exits)
    assert "before its tests finished" in fields[0]["execution"]["error"]
    assert "before its tests finished" in fields[3]["execution"]["error"]
