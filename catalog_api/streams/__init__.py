"""The client-side data path: chunk files, stream writers and readers."""
