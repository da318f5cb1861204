"""A per-file index of pod logs, so that a time-bounded GetPodLogs reads only the records it answers.

A pod log is '<epoch>\\t<line>' records, appended by one reader thread, so their stamps rise: the index keeps
each complete record's stamp and byte span, extends itself from where it stopped as the file grows, and a
query bisects it. A file the index cannot vouch for (stamps out of order, odd stamps) is answered by the plain
whole-file scan, so answers never depend on the index. Only a newline ends a record: a carriage return stays in
its line's text (tqdm's progress updates), as a container runtime's log keeps it.
"""

from __future__ import annotations

import math
import os
import threading
from array import array
from bisect import bisect_left, bisect_right
from collections import OrderedDict
from pathlib import Path

MAX_FILES = 64  # indexes kept (least recently used dropped); ~24 bytes per indexed line


def _stamp(record: bytes) -> float | None:
    stamp, sep, _ = record.partition(b"\t")
    if not sep:
        return None
    try:
        return float(stamp)
    except ValueError:
        return None


def scan(path: Path, start: float, end: float) -> list[str]:
    """Every record's text with start <= stamp <= end, reading the whole file (what the index must match)."""
    lines: list[str] = []
    with open(path, encoding="utf-8", errors="replace", newline="\n") as fh:
        for record in fh:
            stamp, sep, text = record.rstrip("\n").partition("\t")
            try:
                ts = float(stamp)
            except ValueError:
                continue
            if sep and start <= ts <= end:
                lines.append(text)
    return lines


class _FileIndex:
    def __init__(self, inode: int) -> None:
        self.inode = inode
        self.indexed = 0  # bytes read so far: up to the end of the last complete record
        self.stamps = array("d")
        self.starts = array("q")
        self.ends = array("q")  # offset just past each record's newline
        self.usable = True
        self.lock = threading.Lock()

    def extend(self, path: Path) -> None:
        with open(path, "rb") as fh:
            fh.seek(self.indexed)
            data = fh.read()
        complete = data.rfind(b"\n") + 1  # a record still being written is indexed once its newline is there
        if not complete:
            return
        offset = self.indexed
        last = self.stamps[-1] if self.stamps else -math.inf
        for record in data[:complete].split(b"\n")[:-1]:
            size = len(record) + 1
            ts = _stamp(record)
            if ts is not None and self.usable:
                if not math.isfinite(ts) or ts < last:
                    self.usable = False
                else:
                    self.stamps.append(ts)
                    self.starts.append(offset)
                    self.ends.append(offset + size)
                    last = ts
            offset += size
        self.indexed = offset

    def query(self, path: Path, start: float, end: float, last: int | None) -> list[str] | None:
        """The texts of records in [start, end] (only the last `last` of them), or None if unusable."""
        self.extend(path)
        if not self.usable:
            return None
        lo, hi = bisect_left(self.stamps, start), bisect_right(self.stamps, end)
        if last is not None:
            lo = max(lo, hi - last)
        if lo >= hi:
            return []
        with open(path, "rb") as fh:
            fh.seek(self.starts[lo])
            data = fh.read(self.ends[hi - 1] - self.starts[lo])
        texts = []
        for record in data.split(b"\n")[:-1]:
            ts = _stamp(record)
            # Records without a stamp lie between indexed ones; the plain scan skips them too.
            if ts is not None and start <= ts <= end:
                texts.append(record.partition(b"\t")[2].decode("utf-8", errors="replace"))
        return texts


class LogIndex:
    """Indexes of the pod logs asked for lately, shared by the server's request threads."""

    def __init__(self, max_files: int = MAX_FILES) -> None:
        self.max_files = max_files
        self.files: OrderedDict[str, _FileIndex] = OrderedDict()
        self.lock = threading.Lock()

    def lines(self, path: Path, start: float, end: float, last: int | None = None) -> list[str]:
        """Texts of the records stamped within [start, end], in file order; only the last `last` if given."""
        try:
            info = os.stat(path)
        except FileNotFoundError:
            with self.lock:
                self.files.pop(str(path), None)
            return []
        with self.lock:
            index = self.files.get(str(path))
            # A deleted and recreated (or truncated) file starts a new index.
            if index is None or index.inode != info.st_ino or info.st_size < index.indexed:
                index = self.files[str(path)] = _FileIndex(info.st_ino)
            self.files.move_to_end(str(path))
            while len(self.files) > self.max_files:
                self.files.popitem(last=False)
        with index.lock:
            found = index.query(path, start, end, last)
        if found is None:
            found = scan(path, start, end)
            return found if last is None else found[-last:] if last else []
        return found
