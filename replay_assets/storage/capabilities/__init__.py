"""The capabilities of a unit written once for both engines: classes whose every method is an
operation over the unit's ``Sql``, which each adapter's capability class inherits and completes
with its engine's own steps."""
