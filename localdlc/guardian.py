"""Orphan guard: a tiny standalone process that kills pod process groups if localdlc dies.

localdlc starts it with a pipe on stdin and writes "+<pgid>" when a pod starts and "-<pgid>" when it has
been reaped. When localdlc dies for any reason (even SIGKILL) the kernel closes the pipe; this process
reads EOF and SIGKILLs every group still registered. That also catches grandchildren (``sh -c 'a; b'``
forks), which PR_SET_PDEATHSIG on the direct child cannot reach.

Run as a plain script (no package imports), so it works whatever the current directory is.
"""

from __future__ import annotations

import os
import signal
import sys


def main() -> None:
    # Ignore terminal signals aimed at localdlc's process group: this process must outlive it.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    groups: set[int] = set()
    for line in sys.stdin:
        line = line.strip()
        if len(line) < 2:
            continue
        try:
            pgid = int(line[1:])
        except ValueError:
            continue
        if line[0] == "+":
            groups.add(pgid)
        elif line[0] == "-":
            groups.discard(pgid)
    for pgid in groups:
        try:
            os.killpg(pgid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


if __name__ == "__main__":
    main()
