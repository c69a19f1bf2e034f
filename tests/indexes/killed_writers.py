"""Writer processes for the SIGKILL loops: each starts ahead of its trial, imports, prints
``ready`` and waits for its arguments on stdin, so a trial's kill comes as soon as its random
delay is over instead of after the imports."""

from __future__ import annotations

import collections
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

AHEAD = 3
"""Writers started ahead of their trial: a start is mostly waiting on imports, so several
overlap."""


def spawn(script: str) -> subprocess.Popen[str]:
    """A writer running ``script`` (which prints ``ready``, then reads one line of arguments)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(
        [sys.executable, "-c", script],
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )


def ready_writers(script: str) -> collections.deque[subprocess.Popen[str]]:
    """:data:`AHEAD` writers of ``script``, importing."""
    return collections.deque(spawn(script) for _ in range(AHEAD))


def start(
    ready: collections.deque[subprocess.Popen[str]], script: str, line: str
) -> subprocess.Popen[str]:
    """Hand ``line`` to the oldest ready writer, and start another in its place."""
    proc = ready.popleft()
    ready.append(spawn(script))  # imports while this one works
    assert proc.stdin is not None and proc.stdout is not None
    assert proc.stdout.readline() == "ready\n"
    proc.stdin.write(line + "\n")
    proc.stdin.flush()
    return proc


def stop(ready: collections.deque[subprocess.Popen[str]]) -> None:
    """Kill the writers that were never handed a trial."""
    for proc in ready:
        proc.kill()
        proc.wait()
