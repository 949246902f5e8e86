"""Parsed metric names and keys are kept per name and immutable; the registry's classification
memo follows every change of its rules (registered, edited in place, replaced)."""

from __future__ import annotations

import dataclasses

import pytest

from reveal_lab.telemetry import (
    DEFAULT_REGISTRY,
    MetricRegistry,
    MetricRule,
    classify,
    metric_key,
    parse_metric_name,
    register_metric,
)


def test_parsed_names_are_kept_and_frozen():
    a = parse_metric_name("GPU: utilization.gpu.0.htc-g004[%]")
    assert a is parse_metric_name("GPU: utilization.gpu.0.htc-g004[%]")
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.host = "x"  # type: ignore[misc]
    assert parse_metric_name("GPU: utilization.gpu.0.htc-g004[%]").host == "htc-g004"
    assert parse_metric_name(["not", "a", "name"]) is None  # unhashable: answered, not kept
    assert parse_metric_name(None) is None


def test_metric_keys():
    assert metric_key("Perf:IPC.nserver07[-]") == "Perf:IPC"
    assert metric_key("Perf:IPC.nserver08[-]") == "Perf:IPC"
    assert metric_key("free text") == "free text"
    assert metric_key(7) == 7  # not a name: returned as given


def test_classify_is_kept_per_name():
    reg = MetricRegistry([MetricRule("Foo", subsystem="cpu")])
    name = "Foo:util.0.h1[%]"
    assert reg.classify(name) is reg.classify(name)
    m = parse_metric_name(name)
    assert reg.classify(m) is reg.classify(m)
    assert reg.classify(m) == reg.classify(name)
    with pytest.raises(dataclasses.FrozenInstanceError):
        reg.classify(name).subsystem = "gpu"  # type: ignore[misc]


def test_classify_follows_the_rules():
    reg = MetricRegistry([MetricRule("Foo", subsystem="cpu")])
    name = "Foo:util.0.h1[%]"
    assert reg.classify(name).subsystem == "cpu"
    rule = MetricRule("Foo", subsystem="gpu")
    reg.register(rule)  # first: overrides
    assert reg.classify(name).subsystem == "gpu"
    reg.rules.remove(rule)  # edited in place
    assert reg.classify(name).subsystem == "cpu"
    reg.rules.append(MetricRule("Foo", kind="counter"))
    assert reg.classify(name).kind == "counter"
    reg.rules = [MetricRule("Foo", subsystem="memory")]  # replaced
    assert reg.classify(name).subsystem == "memory"
    reg.rules[0] = MetricRule("Foo", subsystem="network")  # one rule swapped
    assert reg.classify(name).subsystem == "network"
    reg.rules.clear()
    assert reg.classify(name).subsystem == "system"
    assert reg.classify(parse_metric_name(name)).known is False
    assert reg.classify(None).known is False


def test_default_registry_follows_register_metric():
    name = "Habana2:utilization.0.h1[%]"
    assert classify(name).subsystem == "system"
    rule = register_metric("Habana2", subsystem="gpu")
    try:
        assert classify(name).subsystem == "gpu"
    finally:
        DEFAULT_REGISTRY.rules.remove(rule)
    assert classify(name).subsystem == "system"


def test_each_registry_keeps_its_own_memo():
    a, b = MetricRegistry(), MetricRegistry()
    a.register(MetricRule("Foo", subsystem="gpu"))
    assert a.classify("Foo:x.h1[-]").subsystem == "gpu"
    assert b.classify("Foo:x.h1[-]").subsystem == "system"
    assert a == MetricRegistry([MetricRule("Foo", subsystem="gpu")])  # the memo is not compared
    assert "memo" not in repr(a)
