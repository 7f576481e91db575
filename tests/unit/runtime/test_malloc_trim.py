"""The C allocator's free memory is given back when a first pass ends (glibc's malloc_trim)."""

from __future__ import annotations

from dbuser_operator.runtime.malloc_trim import trim

MIB = 2**20


def test_freed_memory_under_a_live_block_is_given_back() -> None:
    blocks = [bytearray(4000) for _ in range(10_000)]  # 40 MB of malloc's heap (under its mmap threshold)
    above = bytearray(4000)  # allocated after them: the heap's top cannot shrink past it
    del blocks
    before, after = trim()
    assert before is not None
    assert after is not None
    assert before - after > 20 * MIB, (before / MIB, after / MIB)
    assert len(above) == 4000
