"""One local process of the live tier: started with a log file, polled until ready, stopped by its PID.

Modelled on controller-runtime envtest's ``process.State`` (binary, args, a health check polled
until ready, stop by signal then kill): each process runs in its own process group, so stopping it
also ends anything it started, and nothing else is ever signalled.
"""

from __future__ import annotations

import os
import random
import signal
import socket
import ssl
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path


class StartError(RuntimeError):
    """A process exited or never became ready; the message carries the tail of its log."""


_HANDED_OUT: set[int] = set()


def free_port() -> int:
    """A TCP port on 127.0.0.1 free right now, never one this process handed out before, and below
    the kernel's ephemeral range (``/proc/sys/net/ipv4/ip_local_port_range``): a port is picked
    before its server binds it, and a port of that range can meanwhile become the local end of any
    outgoing connection (every client of the control plane makes them), while one below it is taken
    only by a server that asks for it."""
    low = _ephemeral_low()
    while True:
        port = _PICK.randrange(_LOWEST_PICKED, low) if low > _LOWEST_PICKED + 1000 else _kernel_pick()
        if port in _HANDED_OUT:
            continue
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
        _HANDED_OUT.add(port)
        return port


_PICK = random.SystemRandom()
_LOWEST_PICKED = 10_000  # above the well-known and most registered services' ports


def _kernel_pick() -> int:
    """The kernel's choice, where its ephemeral range leaves no room below it."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _ephemeral_low() -> int:
    """The first port the kernel hands to outgoing connections (Linux's default: 32768)."""
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32_768


def address_in_use(err: StartError) -> bool:
    """The process could not bind its port: another process took it between the pick and the bind."""
    return "address already in use" in str(err)


def log_tail(path: Path, lines: int = 25) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


@dataclass
class Process:
    """A started binary. ``stop()`` sends SIGTERM to its group, then SIGKILL after ``grace``."""

    name: str
    argv: Sequence[str]
    log: Path
    env: dict[str, str] | None = None
    cwd: Path | None = None
    grace: float = 10.0
    popen: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    def start(self) -> Process:
        self.log.parent.mkdir(parents=True, exist_ok=True)
        with self.log.open("ab") as out:
            self.popen = subprocess.Popen(
                list(self.argv),
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=self.env,
                cwd=self.cwd,
                start_new_session=True,
            )
        return self

    @property
    def pid(self) -> int:
        assert self.popen is not None, f"{self.name} was never started"
        return self.popen.pid

    def running(self) -> bool:
        return self.popen is not None and self.popen.poll() is None

    def wait_ready(self, check: Callable[[], bool], timeout: float) -> None:
        """Poll ``check`` until it is true; fail with the log's tail if the process exits first."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not self.running():
                code = self.popen.returncode if self.popen else None
                raise StartError(f"{self.name} exited with {code} before it was ready:\n{log_tail(self.log)}")
            if check():
                return
            time.sleep(0.2)
        raise StartError(f"{self.name} not ready after {timeout:.0f} s:\n{log_tail(self.log)}")

    def signal(self, sig: int) -> None:
        """Signal this process's group (it was started as a session leader, so the group is its own)."""
        if self.running():
            os.killpg(self.pid, sig)

    def stop(self) -> None:
        if self.popen is None or self.popen.poll() is not None:
            return
        self.signal(signal.SIGTERM)
        try:
            self.popen.wait(self.grace)
        except subprocess.TimeoutExpired:
            self.signal(signal.SIGKILL)
            self.popen.wait(10)


def https_ok(url: str, ca: Path | None = None, cert: tuple[Path, Path] | None = None) -> Callable[[], bool]:
    """A readiness check: GET ``url`` answers 200 (TLS verified against ``ca`` when given)."""
    ctx: ssl.SSLContext | None = None
    if url.startswith("https"):
        ctx = ssl.create_default_context(cafile=str(ca)) if ca else ssl._create_unverified_context()
        if cert is not None:
            ctx.load_cert_chain(str(cert[0]), str(cert[1]))

    def check() -> bool:
        try:
            with urllib.request.urlopen(url, timeout=2, context=ctx) as resp:
                return bool(resp.status == 200)
        except (urllib.error.URLError, OSError):
            return False

    return check


def port_open(port: int) -> Callable[[], bool]:
    """A readiness check: something accepts TCP connections on 127.0.0.1:``port``."""

    def check() -> bool:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return True
        except OSError:
            return False

    return check


class ProcessGroup:
    """The processes one harness started, stopped in the reverse order of their start."""

    def __init__(self) -> None:
        self.processes: list[Process] = []

    def add(self, process: Process) -> Process:
        self.processes.append(process)
        return process

    def stop_all(self) -> None:
        errors: list[str] = []
        for proc in reversed(self.processes):
            try:
                proc.stop()
            except (OSError, subprocess.SubprocessError) as err:
                errors.append(f"{proc.name} (pid {proc.popen.pid if proc.popen else '?'}): {err}")
        self.processes.clear()
        if errors:
            raise RuntimeError("could not stop: " + "; ".join(errors))
