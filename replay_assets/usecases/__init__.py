"""The use cases both shells call (Dagster assets, sensors and the CLI), one module each, as
plain functions over the explicit ports of one home (``context.Pipeline``: settings, clock,
warehouse writer and reader). They read the landing area and the warehouse, ask the core what
to do, and write through storage, one writer transaction per use case with the journal's fence
inside it. Readers (``status``) go through the reader port only.

decide     what applies next and why the rest waits (read)
land       land a load date's ready deliveries, checked against their manifests
receipts   whether a landed load date's rows add up, read back after the landing (read)
apply      fold and gate one load date, as a journaled operation
publish    gate and publish daily aggregates, as a journaled operation; what is queued
recover    finish operations a killed process left in doubt; refresh the published copy
resolve    an operator's decision to skip a blocking batch (audited)
backfill   an operator's backfill note
status     the live status (read-only) and recording the waiting dates' statuses (write)
operations step attempts, service levels, re-verification, reconciliation, consumer updates
"""
