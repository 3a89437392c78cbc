"""A build: the pipeline's stages and the one process pool that parses and renders the chapters."""
