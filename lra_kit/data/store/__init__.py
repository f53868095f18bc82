"""Where files live and how they are kept: paths, caches, checksums, fetching, sources and errors."""
