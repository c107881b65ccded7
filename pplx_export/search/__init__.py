"""Full-text search over the archive: `index/search.sqlite` (stdlib sqlite3, FTS5).

`text` segments Chinese and Japanese for the tokenizer, `extract` turns a parsed thread into
index rows, `schema` is the database layout (Datasette-friendly), `index` keeps it current
(the hooks export and re-render call) or rebuilds it, `query` searches it. Below sync,
beside archive: it reads thread files itself and imports neither archive nor cli.
"""
