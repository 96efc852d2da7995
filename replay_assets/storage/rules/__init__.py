"""The storage rules both engines share: table columns, pointer names and the statement texts,
written once in DuckDB's dialect and rendered for each engine (``render.py``). Imports only the
core, so an adapter reads its rules here and never from another engine's modules."""
