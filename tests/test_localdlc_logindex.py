"""localdlc's pod-log index answers exactly what the whole-file scan answers, as the file grows, with records
half written, odd records, stamps out of order and a file recreated; and it reads only what it answers."""

from __future__ import annotations

import random

from localdlc import logindex
from localdlc.logindex import LogIndex, scan

T0 = 1_772_000_000.0


def record(ts: float, text: str) -> bytes:
    return f"{ts:.6f}\t{text}\n".encode()


def check(index: LogIndex, path, rng: random.Random, tries: int = 30) -> None:
    for _ in range(tries):
        a, b = sorted(rng.uniform(T0 - 1, T0 + 12) for _ in range(2))
        if rng.random() < 0.2:
            a = b = T0 + rng.randrange(0, 1000) / 100  # exactly a record's stamp: both ends are inclusive
        whole = scan(path, a, b)
        assert index.lines(path, a, b) == whole, (a, b)
        last = rng.choice([1, 3, 50, 2000])
        assert index.lines(path, a, b, last) == whole[-last:], (a, b, last)


def test_the_index_answers_what_the_scan_answers_as_the_log_grows(tmp_path):
    rng = random.Random(7)
    path = tmp_path / "pod.log"
    index = LogIndex()
    ts = T0
    with open(path, "wb", buffering=0) as out:
        for burst in range(10):
            for i in range(rng.randrange(1, 300)):
                ts += rng.choice([0.0, 0.000001, 0.01])  # equal stamps happen (one microsecond, many lines)
                out.write(record(ts, f"b{burst} l{i} ünïcode \x00 tab\there"))
            if burst == 3:
                out.write(b"not a record\n" + b"x\tno stamp\n" + b"\n" + b"\xff\xfe\tbad stamp\n")
            if burst == 5:
                out.write(record(ts, "bad utf-8 \xff")[:-1] + b"\xff\xfe\n")
            check(index, path, rng)
        out.write(f"{ts + 0.5:.6f}\thalf writ".encode())  # a record still being written
        assert index.lines(path, T0, ts + 1) == scan(path, T0, ts + 1)[:-1], "indexed once its newline is there"
        out.write(b"ten\n")
        check(index, path, rng)


def test_files_the_index_cannot_vouch_for_are_scanned(tmp_path):
    rng = random.Random(11)
    index = LogIndex()
    backwards = tmp_path / "clock.log"
    backwards.write_bytes(b"".join(record(T0 + s, f"l{s}") for s in (1, 2, 3, 2.5, 4, 5)))  # the clock stepped back
    check(index, backwards, rng)
    assert index.lines(backwards, T0 + 2.4, T0 + 2.6) == ["l2.5"]
    carriage = tmp_path / "cr.log"
    carriage.write_bytes(record(T0 + 1, "a\rb\r") + record(T0 + 2, "c\r"))
    check(index, carriage, rng)
    assert index.lines(carriage, 0, float("inf")) == ["a\rb\r", "c\r"], "only a newline ends a record"
    odd = tmp_path / "nan.log"
    odd.write_bytes(record(T0 + 1, "a") + b"nan\tb\n" + b"inf\tc\n" + record(T0 + 2, "d"))
    check(index, odd, rng)
    assert index.lines(odd, 0, float("inf")) == scan(odd, 0, float("inf")) == ["a", "c", "d"]


def test_a_recreated_or_removed_file_is_indexed_afresh(tmp_path):
    path = tmp_path / "pod.log"
    index = LogIndex()
    path.write_bytes(b"".join(record(T0 + i, f"old {i}") for i in range(100)))
    assert index.lines(path, T0, T0 + 1000, 2) == ["old 98", "old 99"]
    path.unlink()
    assert index.lines(path, T0, T0 + 1000) == []
    path.write_bytes(b"".join(record(T0 + i, f"new {i}") for i in range(3)))
    assert index.lines(path, T0, T0 + 1000) == ["new 0", "new 1", "new 2"]
    path.write_bytes(record(T0, "shorter"))  # truncated and rewritten in place
    assert index.lines(path, T0, T0 + 1000) == ["shorter"]


def test_a_time_bounded_read_reads_only_the_bytes_it_answers(tmp_path, monkeypatch):
    path = tmp_path / "pod.log"
    path.write_bytes(b"".join(record(T0 + i / 1000, f"step {i} " + "x" * 80) for i in range(20_000)))
    index = LogIndex()
    index.lines(path, T0, T0 + 1)  # builds the index: one pass over the file
    reads: list[int] = []
    real_open = open

    class Counting:
        def __init__(self, fh):
            self.fh = fh

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.fh.close()

        def seek(self, offset):
            return self.fh.seek(offset)

        def read(self, size=-1):
            data = self.fh.read(size)
            reads.append(len(data))
            return data

    # Counts the bytes the index reads from the file (the file itself is real).
    monkeypatch.setattr(logindex, "open", lambda *a, **k: Counting(real_open(*a, **k)), raising=False)
    got = index.lines(path, T0 + 5, T0 + 6, 10)
    assert got == [f"step {i} " + "x" * 80 for i in range(5991, 6001)]
    assert sum(reads) < 2_000, f"read {sum(reads)} bytes of {path.stat().st_size} for 10 lines"
    monkeypatch.undo()
    path.write_bytes(path.read_bytes())  # same inode, same size: nothing new to index
    assert index.lines(path, T0 + 5, T0 + 6, 10) == got
