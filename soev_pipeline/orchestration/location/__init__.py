"""The code location of the Dagster layer: `definitions.py` holds its `defs`."""
