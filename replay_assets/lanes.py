"""Where the lane coordinator used to live. Instances created before it moved to
``replay_assets.defs.lanes`` name this module in their ``$DAGSTER_HOME/dagster.yaml`` (the file
is copied once, when the instance is created), so the name stays importable."""

from replay_assets.defs.lanes import LaneRunCoordinator

__all__ = ["LaneRunCoordinator"]
