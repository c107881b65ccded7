"""Everything that touches the archive on disk: paths, atomic writes, thread and state files."""
