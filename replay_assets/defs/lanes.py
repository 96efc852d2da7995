"""The run coordinator named in ``dagster.yaml``: Dagster's queued coordinator, plus the lane tag.

Every submitted run (sensor, UI launch, backfill, run retry) passes here before it is queued, so
the ``replay/lane`` tag the run-queue limits key on is stamped before the daemon dequeues it.
"""

import dagster as dg

from replay_assets.core.lanes import LANE_TAG, ancestor_run_id, lane_for


class LaneRunCoordinator(dg.QueuedRunCoordinator):
    def submit_run(self, context: dg.SubmitRunContext) -> dg.DagsterRun:
        run = context.dagster_run
        ancestor = ancestor_run_id(run.tags)
        ancestor_run = self._instance.get_run_by_id(ancestor) if ancestor else None
        lane = lane_for(run.tags, ancestor_run.tags if ancestor_run else None)
        if run.tags.get(LANE_TAG) != lane:
            self._instance.add_run_tags(run.run_id, {LANE_TAG: lane})
            refreshed = self._instance.get_run_by_id(run.run_id)
            assert refreshed is not None
            context = dg.SubmitRunContext(refreshed, context.workspace)
        return super().submit_run(context)
