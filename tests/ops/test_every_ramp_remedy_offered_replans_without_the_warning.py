"""Every remedy a ramp warning offers, set as written, re-plans without that warning and without a new `batch:`
warning. Before the fix, 70B on 512 H100 with `batch_ramp: [{batch_fraction: 0.01, ...}]` (layout TP4 PP2 DP64,
b 1, m 66: G = u = 64) offered "a main batch of 6,400 sequences (schedule.global_batch_tokens: 26214400)": set
literally, the search took 7,040 sequences (its largest m within +10%: 64·1·110) and warned the batch is above the
critical batch (15,852,505 tokens × 1.1 = 17.4 M < 26.2 M). Hand-derived: M' = ceil(1/0.01)·64 = 6,400 sequences
is 26.2 M tokens, above 17.4 M at any layout, so that remedy is not offered; the least fraction is 64/4,224 = 0.01515
→ 0.0152 (4 decimals, up). On 70B with the batch set to 4,194,304 (TP4 PP4 DP32 v5, G = 32·4 = 128) and fraction 0.1,
M' = 10·128 = 1,280 sequences = 5.2 M tokens is within the critical batch, checked by the layout model at
m' = 1,280/32 = 40, and offered with the pins that hold it."""

from __future__ import annotations

import re

import pytest
import yaml

from runplan.plan import build_plan
from runplan.spec import load_plan_text

PLANS = {
    "70b-512": ("llama-3.1-70b", 512, None, 0.01),
    "8b-256": ("llama-3.1-8b", 256, None, 0.05),
    "mixtral-256": ("mixtral-8x7b", 256, None, 0.01),
    "70b-512-4M": ("llama-3.1-70b", 512, 4194304, 0.1),
}


def _text(model: str, gpus: int, batch: int | None, fraction: float) -> dict:
    schedule: dict = {"batch_ramp": [{"batch_fraction": fraction, "token_fraction": 0.02}]}
    if batch:
        schedule["global_batch_tokens"] = batch
    return {
        "schema_version": 1,
        "name": "ramp",
        "model": model,
        "budget": {"tokens": "1T"},
        "training": {"seq_len": 4096},
        "cluster": {"gpu": "h100-sxm", "gpus": gpus},
        "schedule": schedule,
    }


def _warnings(doc: dict) -> list[str]:
    return build_plan(load_plan_text(yaml.safe_dump(doc))).warnings


def _remedies(warning: str) -> list[str]:
    tail = re.split(r"on this layout(?:, any one of)?: ", warning, maxsplit=1)[1]
    return tail.split("; ")


def _applied(doc: dict, remedy: str) -> dict:
    doc = yaml.safe_load(yaml.safe_dump(doc))
    if m := re.match(r"batch_fraction: ([\d.]+)", remedy):
        doc["schedule"]["batch_ramp"][0]["batch_fraction"] = float(m.group(1))
    elif m := re.match(r"parallel\.(\w+): (\d+)(?: with parallel: (\{[^}]*\}))?", remedy):
        doc.setdefault("parallel", {})[m.group(1)] = int(m.group(2))
        doc["parallel"].update(yaml.safe_load(m.group(3) or "{}"))
    elif m := re.search(r"schedule\.global_batch_tokens: (\d+) with parallel: (\{[^}]*\})", remedy):
        doc["schedule"]["global_batch_tokens"] = int(m.group(1))
        doc.setdefault("parallel", {}).update(yaml.safe_load(m.group(2)))
    else:
        raise AssertionError(f"a remedy the test cannot set: {remedy}")
    return doc


@pytest.mark.parametrize("name", list(PLANS))
def test_each_offered_remedy_replans_clean(name):
    doc = _text(*PLANS[name])
    before = _warnings(doc)
    (ramp,) = [w for w in before if w.startswith("schedule: ramp stage 1")]
    batch_before = {w for w in before if w.startswith("batch:")}
    assert not batch_before
    remedies = _remedies(ramp)
    assert remedies
    for remedy in remedies:
        after = _warnings(_applied(doc, remedy))
        assert not [w for w in after if w.startswith("schedule: ramp stage 1")], remedy
        assert not [w for w in after if w.startswith("batch:")], (remedy, after)


def test_a_main_batch_above_the_critical_batch_is_not_offered():
    (ramp,) = [w for w in _warnings(_text(*PLANS["70b-512"])) if "ramp stage 1" in w]
    assert _remedies(ramp) == ["batch_fraction: 0.0152 (one group, the least ramp stage this layout runs)"]
    assert "6,400" not in ramp


def test_a_main_batch_within_the_critical_batch_is_offered_with_its_pins():
    (ramp,) = [w for w in _warnings(_text(*PLANS["70b-512-4M"])) if "ramp stage 1" in w]
    assert (
        "a main batch of 1,280 sequences (schedule.global_batch_tokens: 5242880 with parallel: {dp: 32, "
        "micro_batch: 1, microbatches: 40, pp: 4, vpp: 5}), whose 0.1 holds one group"
    ) in ramp
