"""StreamCapture: bounded memory, nothing lost (the spill file), reads since the last read."""

from __future__ import annotations

from pathlib import Path

from local_tools.shell.capture import StreamCapture


def _capture(tmp_path: Path, **kw: int) -> StreamCapture:
    kw.setdefault("head_bytes", 100)
    kw.setdefault("tail_bytes", 1000)
    return StreamCapture(tmp_path / "spill", "t", **kw)


def test_small_output_is_kept_whole_and_not_spilled(tmp_path: Path) -> None:
    cap = _capture(tmp_path)
    cap.feed(b"hello\n")
    cap.feed(b"world\n")
    p = cap.preview(50, 50)
    assert (p.head, p.tail, p.omitted_bytes) == (b"hello\nworld\n", b"", 0)
    assert cap.spill_path is None
    assert not (tmp_path / "spill").exists()


def test_large_output_keeps_head_and_tail_and_spills_every_byte(tmp_path: Path) -> None:
    cap = _capture(tmp_path)
    data = b"".join(b"line %05d\n" % i for i in range(5000))  # 55,000 bytes
    for i in range(0, len(data), 777):
        cap.feed(data[i : i + 777])
    cap.close()
    p = cap.preview(40, 60)
    assert p.head == data[:40]
    assert p.tail == data[-60:]
    assert p.omitted_bytes == len(data) - 100
    assert cap.total_bytes == len(data)
    assert cap.spill_path is not None
    assert cap.spill_path.read_bytes() == data


def test_memory_stays_within_the_ring(tmp_path: Path) -> None:
    cap = _capture(tmp_path, tail_bytes=4096)
    for _ in range(1000):
        cap.feed(b"x" * 1000 + b"\n")
    held = sum(len(c) for _, c, _ in cap._ring)
    assert held <= 4096
    assert cap.spill_path is not None
    assert cap.spill_path.stat().st_size == 1001 * 1000


def test_line_bound_keeps_only_the_last_lines(tmp_path: Path) -> None:
    cap = _capture(tmp_path, tail_bytes=1 << 20, max_lines=10)
    cap.feed(b"".join(b"%d\n" % i for i in range(100)))
    new = cap.read_new()
    assert new.data.splitlines() == [b"%d" % i for i in range(90, 100)]
    assert new.skipped_bytes == len(b"".join(b"%d\n" % i for i in range(90)))
    # Spilled as soon as the lines outgrew the ring, so the skipped part is on disk.
    cap.close()
    assert cap.spill_path is not None
    assert cap.spill_path.read_bytes().startswith(b"0\n1\n2\n")


def test_read_new_returns_only_what_arrived_since_the_last_read(tmp_path: Path) -> None:
    cap = _capture(tmp_path)
    cap.feed(b"one\n")
    assert cap.read_new().data == b"one\n"
    assert cap.read_new().data == b""
    cap.feed(b"two\n")
    cap.feed(b"three\n")
    assert cap.read_new(limit=4).data == b"two\n"
    assert cap.unread_bytes() == 6
    assert cap.read_new().data == b"three\n"


def test_spill_threshold_below_the_ring(tmp_path: Path) -> None:
    cap = _capture(tmp_path, tail_bytes=10_000, head_bytes=10)
    cap2 = StreamCapture(tmp_path / "s2", "t", tail_bytes=10_000, spill_after_bytes=50)
    for c in (cap, cap2):
        c.feed(b"a" * 60)
    assert cap.spill_path is None
    assert cap2.spill_path is not None
    cap2.close()
    assert cap2.spill_path.read_bytes() == b"a" * 60


def test_unwritable_spill_dir_keeps_the_preview(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a dir")
    cap = StreamCapture(blocker / "spill", "t", head_bytes=10, tail_bytes=100)
    cap.feed(b"z" * 500)
    p = cap.preview(10, 20)
    assert p.head == b"z" * 10
    assert p.tail == b"z" * 20
    assert cap.spill_path is None
    assert cap.spill_error
