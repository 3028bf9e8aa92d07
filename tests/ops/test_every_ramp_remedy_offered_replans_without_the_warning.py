"""Every remedy a ramp warning offers, set as written, re-plans without that warning and without a new `batch:`
warning. Before the fix, 70B on 512 H100 with `batch_ramp: [{batch_fraction: 0.01, ...}]` (layout TP4 PP2 DP64,
b 1, m 66: G = u = 64) offered "a main batch of 6,400 sequences (schedule.global_batch_tokens: 26214400)": set
literally, the search took 7,040 sequences (its largest m within +10%: 64·1·110) and warned the batch is above the
critical batch (15,852,505 tokens × 1.1 = 17.4 M < 26.2 M). Hand-derived: M' = ceil(1/0.01)·64 = 6,400 sequences
is 26.2 M tokens, above 17.4 M at any layout, so that remedy is not offered; the least fraction is 64/4,224 = 0.01515
→ 0.0152 (4 decimals, up). On 70B with the batch set to 4,194,304 (TP4 PP4 DP32 v5, G = 32·4 = 128) and fraction 0.1,
M' = 10·128 = 1,280 sequences = 5.2 M tokens is within the critical batch, checked by the layout model at
m' = 1,280/32 = 40, and offered with the pins that hold it. `parallel.micro_batch: 1`, offered where b > 1, was
offered alone: 8B on 256 H100 at s = 1,024 (DP256, b 2, m 15) re-planned at b 1, m 31, another batch than the one
the warning was about; now checked at b = 1, m = m·b by the layout model and offered with its pins."""

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
    "8b-256-s1024": ("llama-3.1-8b", 256, None, 0.05, 1024),
    "70b-512-s1024": ("llama-3.1-70b", 512, None, 0.01, 1024),
}


def _text(model: str, gpus: int, batch: int | None, fraction: float, seq_len: int = 4096) -> dict:
    schedule: dict = {"batch_ramp": [{"batch_fraction": fraction, "token_fraction": 0.02}]}
    if batch:
        schedule["global_batch_tokens"] = batch
    return {
        "schema_version": 1,
        "name": "ramp",
        "model": model,
        "budget": {"tokens": "1T"},
        "training": {"seq_len": seq_len},
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


def test_micro_batch_one_is_offered_with_the_pins_that_keep_the_batch():
    """8B on 256 H100 at s = 1,024: TP1 PP1 DP256, b 2, m 15, M = 256·2·15 = 7,680 sequences; 0.05 × 7,680 = 384
    is below u = 512, so the stage runs 512. At b = 1 with m = 15·2 = 30 (the same batch, checked by the layout
    model) the group is 256 and the stage runs floor(384/256)·256 = 256. Pinned alone, micro_batch: 1 let the
    search re-pick m = 31 (7,936 sequences), not the batch the warning was about; with the pins it keeps 7,680."""
    doc = _text(*PLANS["8b-256-s1024"])
    (ramp,) = [w for w in _warnings(doc) if "ramp stage 1" in w]
    remedy = (
        "parallel.micro_batch: 1 with parallel: {dp: 256, microbatches: 30, vpp: 1} (groups of 256 sequences: "
        "the stage runs 256)"
    )
    assert remedy in _remedies(ramp)
    plan = build_plan(load_plan_text(yaml.safe_dump(_applied(doc, remedy))))
    best = plan.layout.best
    assert (best.dp, best.micro_batch, best.microbatches) == (256, 1, 30)
    sequences = [s.global_batch_sequences for s in plan.schedule.batch_stages]
    assert sequences == [256, 7680]


def test_micro_batch_one_is_not_offered_where_the_plan_found_b_one_fails_a_rule():
    """The same layout as a bare schedule request (d 256, b 2, M 7,680 at s = 1,024, fraction 0.05): with the pins
    the plan checked, the remedy carries them; where the plan's check at b = 1 failed ('') it is not offered and
    only the least fraction 512/7,680 = 0.06667 → 0.0667 is."""
    from runplan.ops import RampStage, ScheduleRequest, ScheduleSpec, plan_schedule

    spec = ScheduleSpec(
        global_batch_tokens=7680 * 1024, batch_ramp=[RampStage(batch_fraction=0.05, token_fraction=0.02)]
    )
    base = dict(training_tokens=1e12, compute_flops=5e22, seq_len=1024, dp=256, micro_batch=2, spec=spec)

    def ramp(pins: str) -> str:
        warnings = plan_schedule(ScheduleRequest(**base, micro_batch_one_pins=pins)).warnings
        (warning,) = [w for w in warnings if w.startswith("ramp stage 1")]
        return warning

    pins = "dp: 256, microbatches: 30, vpp: 1"
    assert (
        f"parallel.micro_batch: 1 with parallel: {{{pins}}} (groups of 256 sequences: the stage runs 256)"
        in (ramp(pins))
    )
    assert _remedies(ramp("")) == [
        "batch_fraction: 0.0667 (one group, the least ramp stage this layout runs)"
    ]
