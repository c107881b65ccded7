"""One sub-package per command family; the CLI calls each family's entry functions."""
