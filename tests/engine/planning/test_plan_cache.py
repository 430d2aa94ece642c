"""engine/planning/plan_cache without Spark: kept values, validity checks, least recently used out, unhashable
keys never kept."""

from __future__ import annotations

from ducklake_cli.engine.planning.plan_cache import PlanCache


def test_get_builds_once_and_evicts_the_least_recently_used() -> None:
    cache = PlanCache(2)
    built: list[str] = []

    def build(name: str) -> str:
        built.append(name)
        return name.upper()

    assert cache.get("a", lambda: build("a")) == "A"
    assert cache.get("a", lambda: build("a")) == "A"
    cache.get("b", lambda: build("b"))
    cache.get("a", lambda: build("a"))  # a is now the most recent
    cache.get("c", lambda: build("c"))  # b goes
    cache.get("a", lambda: build("a"))
    cache.get("b", lambda: build("b"))
    assert built == ["a", "b", "c", "b"]
    assert len(cache) == 2


def test_invalid_entries_are_rebuilt_and_unhashable_keys_not_kept() -> None:
    cache = PlanCache()
    assert cache.get("k", lambda: 1) == 1
    assert cache.get("k", lambda: 2, lambda kept: kept != 1) == 2  # the kept 1 is no longer valid
    assert cache.get("k", lambda: 3) == 2
    assert cache.get(("x", []), lambda: 4) == 4  # type: ignore[arg-type]
    assert len(cache) == 1
    cache.clear()
    assert len(cache) == 0


def test_no_cache_keeps_nothing() -> None:
    cache = PlanCache(0)
    assert cache.get("k", lambda: 1) == 1
    assert cache.get("k", lambda: 2) == 2
