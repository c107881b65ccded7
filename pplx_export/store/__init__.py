"""Everything under `index/` but the search database: the state store and its migrations."""
