"""The use cases both shells call (Dagster assets, sensors and the CLI), one module each, as
plain functions over the explicit ports of one home (``context.Pipeline``: settings, clock
and the store that opens units of its warehouse). They read the landing area and the warehouse,
ask the core what to do, and write through storage, one writer transaction per use case with
the journal's fence inside it. Readers (``status``, a sensor's tick) read through read units,
which never take the lock.

decide     what applies next and why the rest waits (read)
land       land a load date's ready deliveries, checked against their manifests
receipts   whether a landed load date's rows add up, read back after the landing (read)
apply      fold and gate one load date, as a journaled operation
publish    gate and publish daily aggregates, as a journaled operation; what is queued
recover    finish operations a killed process left in doubt; refresh the published copy
prune      prune the load dates behind the replay horizon, each as a journaled operation
resolve    an operator's decision on a blocking batch: skip or reland (audited)
backfill_note   an operator's backfill note: who, why, which range, which lane
status     the live status (read-only) and recording the waiting dates' statuses (write)
sensor_cursors  what the manifest sensor remembers between ticks, and where ``run`` keeps it
operations step attempts, service levels, re-verification, reconciliation, consumer updates
"""
