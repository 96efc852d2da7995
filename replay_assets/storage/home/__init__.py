"""The home's own files, clock, paths and failpoints: engine-neutral, below every adapter."""
