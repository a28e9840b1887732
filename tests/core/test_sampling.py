"""Phase 3 attribute draws: seeded, per slot, within bounds, covering products."""

from __future__ import annotations

import itertools

import pytest
from coeval.config.model import SamplingConfig
from coeval.phases._sampling import AttributeSampler, CrossProductTooLarge

TARGET = {"topic": ["a", "b", "c"], "level": ["easy", "hard"], "form": ["q", "task"]}
NUANCED = {"tone": ["x", "y"], "length": ["short", "long"], "style": ["s1", "s2"]}


def sampler(seed=0, teacher="t", target=(1, 2), nuance=(1, 2), total=20, **kw):
    return AttributeSampler(target_attributes=TARGET, nuanced_attributes=NUANCED,
                            sampling=SamplingConfig(target=target, nuance=nuance, total=total),
                            seed=seed, task="task", teacher=teacher, **kw)


def draws(s):
    return [s.draw(i) for i in range(1, s.slots() + 1)]


def test_same_seed_same_draws_and_another_seed_differs():
    assert draws(sampler(seed=7)) == draws(sampler(seed=7))
    assert draws(sampler(seed=7)) != draws(sampler(seed=8))
    assert draws(sampler(teacher="a")) != draws(sampler(teacher="b"))


def test_a_slot_draws_the_same_whatever_was_drawn_before():
    s1, s2 = sampler(), sampler()
    late = s1.draw(17)
    for i in range(1, 17):
        s2.draw(i)
    assert s2.draw(17) == late


def test_counts_stay_within_the_configured_bounds():
    for d in draws(sampler(target=(2, 3), nuance=(0, 1), total=200)):
        assert 2 <= len(d.target) <= 3
        assert 0 <= len(d.nuanced) <= 1
        for k, v in d.target.items():
            assert v in TARGET[k]
        for k, v in d.nuanced.items():
            assert v in NUANCED[k]
    # max above the number of attributes is capped, never an error
    assert all(len(d.target) == 3 for d in draws(sampler(target=(3, 9), total=10)))


def test_target_all_covers_the_cross_product_without_repeats():
    s = sampler(target="all", total=12)
    combos = [tuple(d.target[k] for k in TARGET) for d in draws(s)]
    assert sorted(combos) == sorted(itertools.product(*TARGET.values()))


def test_target_all_with_fewer_slots_draws_distinct_combinations():
    combos = [tuple(d.target.values()) for d in draws(sampler(target="all", total=5))]
    assert len(set(combos)) == 5


def test_complete_raises_the_slot_count_to_the_product():
    s = sampler(total=4, complete=True)
    assert s.slots() == 12
    assert len({tuple(d.target.values()) for d in draws(s)}) == 12
    assert sampler(total=30, complete=True).slots() == 30


def test_complete_refuses_an_enormous_product():
    big = {f"a{i}": [str(j) for j in range(10)] for i in range(6)}
    with pytest.raises(CrossProductTooLarge, match="1,000,000"):
        AttributeSampler(target_attributes=big, nuanced_attributes={}, sampling=SamplingConfig(total=1),
                         seed=0, task="t", teacher="x", complete=True)


def test_label_attributes_are_always_drawn():
    s = sampler(target=(1, 1), total=50, always_include=("level",))
    assert all(list(d.target) == ["level"] for d in draws(s))
    s = sampler(target=(2, 2), total=50, always_include=("level",))
    assert all("level" in d.target and len(d.target) == 2 for d in draws(s))


def test_no_attributes_draw_empty_maps():
    s = AttributeSampler(target_attributes={}, nuanced_attributes=None, sampling=SamplingConfig(total=3),
                         seed=0, task="t", teacher="x")
    assert [d.target for d in draws(s)] == [{}, {}, {}]


def test_the_order_of_keys_in_the_config_does_not_change_the_draws():
    reordered = {k: TARGET[k] for k in reversed(list(TARGET))}
    nuanced = {k: NUANCED[k] for k in reversed(list(NUANCED))}
    for target in ((1, 2), "all"):
        a = sampler(target=target)
        b = AttributeSampler(target_attributes=reordered, nuanced_attributes=nuanced,
                             sampling=SamplingConfig(target=target, nuance=(1, 2), total=20),
                             seed=0, task="task", teacher="t")
        assert [(d.target, d.nuanced) for d in draws(a)] == [(d.target, d.nuanced) for d in draws(b)]
        assert all(list(d.target) == [k for k in reordered if k in d.target] for d in draws(b))
