"""pplx-export: a complete, faithful, local archive of a Perplexity library."""

__version__ = "0.1.0"
