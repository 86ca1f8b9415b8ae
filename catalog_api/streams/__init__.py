"""The client-side data path: chunk files, stream writers and readers, and the clean-up of dead files.

    writer = StreamWriter(catalog, registry, "shop", "orders", schema=orders_v1)
    writer.write({"id": 1, "amount": 9.5}, routing_key="customer-17")
    writer.flush()                      # one chunk per segment, one atomic commit
    for record in StreamReader(catalog, registry, "shop", "orders").read():
        ...
"""

from catalog_api.streams.reader import StreamReader
from catalog_api.streams.writer import CommitInDoubt, StreamWriter, segment_of

__all__ = ["CommitInDoubt", "StreamReader", "StreamWriter", "segment_of"]
