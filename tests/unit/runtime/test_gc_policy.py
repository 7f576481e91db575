import gc

from dbuser_operator.runtime import gc_policy


def test_no_collection_while_the_caches_fill_and_what_they_hold_is_frozen_after() -> None:
    assert gc.isenabled()
    frozen = gc.get_freeze_count()
    try:
        with gc_policy.paused_then_frozen():
            assert not gc.isenabled()
            cache = [{"metadata": {"name": f"u{n}"}} for n in range(1000)]
        assert gc.isenabled()
        assert gc.get_freeze_count() >= frozen + len(cache)
    finally:
        gc.unfreeze()


def test_collection_stays_off_after_when_it_was_off_before() -> None:
    gc.disable()
    try:
        with gc_policy.paused_then_frozen():
            pass
        assert not gc.isenabled()
    finally:
        gc.unfreeze()
        gc.enable()


def test_what_was_frozen_goes_back_to_the_collector() -> None:
    with gc_policy.paused_then_frozen():
        pass
    assert gc.get_freeze_count() > 0
    gc_policy.unfrozen()
    assert gc.get_freeze_count() == 0
