"""The set-based fold equals the sequential oracle on arbitrary inputs, conflicts included."""

from __future__ import annotations

import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st

from replay_assets.core.fold import (
    COMMITTED_SCHEMA,
    EVENT_SCHEMA,
    REGISTRY_SCHEMA,
    Committed,
    FoldInput,
    fold_frame,
    fold_reference,
    frame_to_result,
)

small = st.sampled_from
raw_event = st.tuples(
    small(["s1", "s2"]),
    small(["e1", "e2", "e3", "e4"]),
    st.integers(1, 4),
    small(["order_line", "customer"]),
    small(["k1", "k2"]),
    st.integers(1, 4),
    small(["c1", "c2", "c3"]),
    small(["i1", "i2", "tombstone"]),
)


@st.composite
def fold_inputs(draw: st.DrawFn) -> tuple[list[FoldInput], dict, dict]:
    raws = draw(st.lists(raw_event, max_size=14))
    events = [FoldInput(pos, *raw) for pos, raw in enumerate(draw(st.permutations(raws)))]
    committed = {
        (entity, key): Committed(version, image)
        for entity, key, version, image in draw(
            st.lists(
                st.tuples(
                    small(["order_line", "customer"]),
                    small(["k1", "k2"]),
                    st.integers(1, 4),
                    small(["i1", "i2", "tombstone"]),
                ),
                max_size=4,
            )
        )
    }
    registry: dict = {}
    seqs: set = set()
    for source, event_id, seq, content in draw(
        st.lists(
            st.tuples(
                small(["s1", "s2"]), small(["e1", "e2", "e5"]), st.integers(1, 5), small(["c1", "c2", "c3"])
            ),
            max_size=4,
        )
    ):
        if (source, event_id) not in registry and (source, seq) not in seqs:
            registry[(source, event_id)] = (seq, content)
            seqs.add((source, seq))
    return events, committed, registry


def as_frames(events: list[FoldInput], committed: dict, registry: dict) -> tuple[pl.DataFrame, ...]:
    ev = pl.DataFrame([e.__dict__ for e in events], schema=EVENT_SCHEMA)
    cm = pl.DataFrame(
        [
            {"entity": e, "key": k, "version": c.version, "image_sha256": c.image_sha256}
            for (e, k), c in committed.items()
        ],
        schema=COMMITTED_SCHEMA,
    )
    rg = pl.DataFrame(
        [
            {"source": s, "event_id": i, "source_seq": q, "content_sha256": c}
            for (s, i), (q, c) in registry.items()
        ],
        schema=REGISTRY_SCHEMA,
    )
    return ev, cm, rg


@settings(max_examples=400, deadline=None)
@given(fold_inputs())
def test_set_based_fold_equals_oracle(case: tuple[list[FoldInput], dict, dict]) -> None:
    events, committed, registry = case
    expected = fold_reference(events, committed, registry)
    actual = frame_to_result(fold_frame(*as_frames(events, committed, registry)))
    assert actual == expected
