"""The Spark Connect + Delta Lake adapter of the warehouse (docs/deploy.md): the same
contracts as the DuckDB adapter, in Spark SQL and DataFrames on Delta tables. Imports pyspark,
which only the ``spark`` extra installs: nothing outside this room imports it at module level."""
