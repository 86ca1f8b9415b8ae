"""Event chunk framing: what the writer frames, every reader splits back, and truncation is caught."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from catalog_api.streams.chunks import (
    EVENT_MAGIC,
    ChunkFormatError,
    frame_events,
    parse_event_chunk,
    split_event_chunk,
)

events = st.lists(st.binary(min_size=5, max_size=300).map(lambda b: b"\x01" + b[1:]), max_size=50)


@given(events)
def test_framed_events_split_back_as_they_were(written: list[bytes]) -> None:
    chunk = EVENT_MAGIC + bytes(frame_events(written))
    assert split_event_chunk(chunk) == written
    assert [bytes(e) for e in parse_event_chunk(chunk)] == written


@given(events.filter(bool), st.data())
def test_a_chunk_cut_inside_an_event_is_an_error(written: list[bytes], data: st.DataObject) -> None:
    chunk = EVENT_MAGIC + bytes(frame_events(written))
    boundaries, offset = set(), len(EVENT_MAGIC)
    for event in written:
        offset += 4 + len(event)
        boundaries.add(offset)
    # A cut between two events leaves a well-formed chunk: the reader checks the committed count for that.
    cut = data.draw(st.integers(len(EVENT_MAGIC) + 1, len(chunk) - 1).filter(lambda n: n not in boundaries))
    with pytest.raises(ChunkFormatError, match="truncated"):
        split_event_chunk(chunk[:cut])


def test_bytes_that_are_not_an_event_chunk_are_refused() -> None:
    with pytest.raises(ChunkFormatError, match="magic"):
        split_event_chunk(b"PAR1" + bytes(20))
