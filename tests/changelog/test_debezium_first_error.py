"""A file with several bad lines is refused for its earliest one, whatever kind each is: a value that does
not convert (found when the batch converts) comes before a later line that is not JSON (found at once),
and of two bad values in different columns the earlier line's is named."""

from __future__ import annotations

import pytest

from catalog_api.streams.debezium.decoder import DebeziumDecoder, DebeziumError
from catalog_api.streams.merge import TableLayout
from tests.changelog.helpers import ARROW, event, line, row

KEYED = TableLayout(("id",))


def first_error(events: list[bytes]) -> DebeziumError:
    with pytest.raises(DebeziumError) as caught:
        list(DebeziumDecoder(ARROW, KEYED, batch_size=1000).batches(events))
    return caught.value


def test_a_bad_value_before_a_line_that_is_not_json_is_named_first() -> None:
    events = [line(event("c", None, row(1), 1)), line(event("c", None, row(2, qty="lots"), 2)),
              line(event("c", None, row(3), 3)), b"{not json", line(event("c", None, row(5), 5))]
    error = first_error(events)
    assert error.line == 2
    assert "column 'qty': 'lots'" in str(error)


def test_of_two_bad_values_in_two_columns_the_earlier_line_is_named() -> None:
    events = [line(event("c", None, row(i), i)) for i in range(1, 6)]
    events[3] = line(event("c", None, row(4, qty="many"), 4))      # line 4, column qty
    events[1] = line(event("c", None, row(2, price="%%%"), 2))     # line 2, column price (after qty)
    error = first_error(events)
    assert error.line == 2
    assert "column 'price'" in str(error)
