"""The archive's thread directory tree on disk: paths, thread writer, raw files, assets, scans.

State and index files under `index/` are store/'s; this package imports nothing above it.
"""
