"""Spaces: sync a space's threads and files and write its pages."""
