"""Real controller processes (``python -m tpu_platform.hotswap``) against an API double.

Each replica gets its own identity, a config file and a kubeconfig pointing at the double, and
logs JSON lines to a file. A replica that exits is restarted by :meth:`Replica.ensure_running`,
as the kubelet restarts a container.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import yaml


def write_config(path: Path, *, settings: dict[str, Any], runtime: dict[str, Any]) -> Path:
    path.write_text(yaml.safe_dump({**settings, "runtime": runtime}), encoding="utf-8")
    return path


class Replica:
    def __init__(self, identity: str, *, kubeconfig: str, config: Path, log_dir: Path) -> None:
        self.identity = identity
        self.kubeconfig = kubeconfig
        self.config = config
        self.log_path = log_dir / f"{identity}.log"
        self.proc: subprocess.Popen[bytes] | None = None
        self.starts = 0
        self.exit_codes: list[int] = []
        self.stopped_at: float | None = None

    def start(self) -> None:
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        env.pop("KUBERNETES_SERVICE_HOST", None)
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "tpu_platform.hotswap",
                    "--config",
                    str(self.config),
                    "--kubeconfig",
                    self.kubeconfig,
                    "--identity",
                    self.identity,
                ],
                stdout=subprocess.DEVNULL,
                stderr=log,
                env=env,
            )
        self.starts += 1

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def ensure_running(self, *, restart_delay: float = 1.0) -> bool:
        """Restart an exited replica after ``restart_delay``; True if it was (re)started now."""
        if self.proc is None:
            self.start()
            return True
        code = self.proc.poll()
        if code is None:
            return False
        if self.stopped_at is None:
            self.stopped_at = time.monotonic()
            self.exit_codes.append(code)
        if time.monotonic() - self.stopped_at >= restart_delay:
            self.stopped_at = None
            self.start()
            return True
        return False

    def sigterm(self) -> None:
        if self.running:
            assert self.proc is not None
            self.proc.send_signal(signal.SIGTERM)

    def stop(self, timeout: float = 20.0) -> int | None:
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        code = self.proc.returncode
        if self.stopped_at is None:
            self.exit_codes.append(code)
            self.stopped_at = time.monotonic()
        return code

    def logs(self) -> list[dict[str, Any]]:
        """The replica's JSON log lines (non-JSON lines, e.g. a traceback, as ``{"raw": line}``)."""
        out: list[dict[str, Any]] = []
        if not self.log_path.exists():
            return out
        for line in self.log_path.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                record = json.loads(line)
                out.append(record if isinstance(record, dict) else {"raw": line})
            except ValueError:
                out.append({"raw": line})
        return out
