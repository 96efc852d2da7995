"""The journal's state machine (core/journal.py): its transition table and the recovery decision."""

from hypothesis import given
from hypothesis import strategies as st

from replay_assets.core.journal import MUTATION_BEGUN, TRANSITIONS, Next, next_step
from replay_assets.core.status import CommitState

S = CommitState
STATES = st.sampled_from(list(CommitState))


def reachable(start: CommitState, avoid: frozenset[CommitState] = frozenset()) -> set[CommitState]:
    seen, todo = {start}, [start]
    while todo:
        for nxt in TRANSITIONS[todo.pop()] - avoid:
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen


def test_every_state_is_reachable_and_only_complete_is_terminal() -> None:
    assert reachable(S.PREPARING) == set(CommitState)
    assert [s for s in CommitState if not TRANSITIONS[s]] == [S.COMPLETE]
    assert all(S.COMPLETE in reachable(s) for s in CommitState)


def test_commit_unknown_is_entered_only_once_the_mutation_began_and_left_only_by_a_mark() -> None:
    assert {s for s in CommitState if S.COMMIT_UNKNOWN in TRANSITIONS[s]} == MUTATION_BEGUN
    assert TRANSITIONS[S.COMMIT_UNKNOWN] == {S.TARGET_COMMITTED, S.PREPARED}


def test_without_a_hold_nothing_returns_before_the_fence_once_the_target_committed() -> None:
    """Only an operator's hold (and its release without a fence) leads back to PREPARED."""
    after_fence = reachable(S.TARGET_COMMITTED, avoid=frozenset({S.COMMIT_UNKNOWN}))
    assert after_fence == {S.TARGET_COMMITTED, S.COMMITTED_INCOMPLETE, S.COMPLETE}


@given(state=st.none() | STATES, target_matches=st.booleans())
def test_a_present_fence_never_lets_the_mutation_run_again(
    state: CommitState | None, target_matches: bool
) -> None:
    assert next_step(state, True, target_matches) is not Next.MUTATE


@given(state=st.none() | STATES, fence=st.booleans(), target_matches=st.booleans())
def test_a_run_stops_exactly_when_an_operator_holds_the_operation(
    state: CommitState | None, fence: bool, target_matches: bool
) -> None:
    assert (next_step(state, fence, target_matches) is Next.STOP) == (state is S.COMMIT_UNKNOWN)
