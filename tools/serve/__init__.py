"""tools serve: the preview server and the incremental state that keeps a rebuild small."""
