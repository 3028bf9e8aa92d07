"""A ramp stage raised above its fraction (or held at the main batch) by the divisibility rule offers only
remedies that can apply to the chosen layout, each with its value. `runplan plan` on examples/405b-16k-h100-8k.yaml
with `batch_ramp: [{batch_fraction: 0.3, token_fraction: 0.015}]` (layout TP8 PP16 DP64 CP2, b 1, v 8, main batch
d·b·m = 64·1·32 = 2,048 sequences) warned "lower micro_batch or raise the batch" with the micro-batch already 1.

Hand-derived (docs/operations.md §1): the interleaved schedule runs micro-batches in groups of p, so a stage is a
multiple of G = u·p = 64·16 = 1,024 sequences; 0.3 × 2,048 = 614.4 is below one group, so the stage runs 1,024.
The least fraction this layout runs is 1,024 / 2,048 = 0.5. A main batch at which 0.3 holds a whole group is a
multiple of G with 0.3·M >= G: M = ceil(1/0.3)·G = 4·1,024 = 4,096 sequences = 33,554,432 tokens at 8,192 (the
stage then runs 1,024 = 0.25 of it). Without interleaving the group is u = 64 (0.3 × 2,048 → 576), but this layout
at v = 1 has a bubble of (p − 1)/m = 15/32 = 0.47 over the 0.15 cap, so v = 1 is not offered; b is 1 already, so
no smaller micro-batch is."""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from typer.testing import CliRunner

from runplan.cli.app import app
from runplan.ops import RampStage, ScheduleRequest, ScheduleSpec, plan_schedule

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "405b-16k-h100-8k.yaml"
RAMP = "  batch_ramp: [{batch_fraction: 0.3, token_fraction: 0.015}]\n"


def _schedule(fraction: float = 0.3, **kw) -> list[str]:
    spec = ScheduleSpec(
        global_batch_tokens=kw.pop("main", 2048) * 8192,
        batch_ramp=[RampStage(batch_fraction=fraction, token_fraction=0.015)],
    )
    base = dict(training_tokens=15.6e12, compute_flops=4e25, seq_len=8192, dp=64, micro_batch=1, spec=spec)
    base.update(microbatch_multiple=16, **kw)
    return [w for w in plan_schedule(ScheduleRequest(**base)).warnings if w.startswith("ramp stage 1")]


def test_the_405b_ramp_offers_the_fraction_it_runs_and_the_batch_that_holds_the_fraction():
    (warning,) = _schedule()
    assert "runs 1,024 sequences, 0.5 of the main batch, not the 0.3 asked (614 sequences)" in warning
    assert "micro_batch" not in warning and "vpp" not in warning
    assert "batch_fraction: 0.5" in warning
    assert (
        "4,096 sequences" not in warning
    )  # a larger main batch only where the plan checked it re-plans clean
    (warning,) = _schedule(checked_main_batches={4096: "parallel: {dp: 64}"})
    assert "4,096 sequences (schedule.global_batch_tokens: 33554432 with parallel: {dp: 64})" in warning


def test_a_smaller_micro_batch_and_no_interleaving_are_offered_only_where_they_apply():
    """d 32, b 2 (u 64, G 1,024): at b 1 the group is 32·16 = 512 <= 614.4, the stage 512 sequences; with v = 1
    checked by the plan to pass (fits_without_interleaving), the group is u = 64: 0.3 × 2,048 → 576."""
    pins = "dp: 32, microbatches: 64, pp: 16, vpp: 16"
    (warning,) = _schedule(dp=32, micro_batch=2, fits_without_interleaving=True, micro_batch_one_pins=pins)
    assert (
        f"parallel.micro_batch: 1 with parallel: {{{pins}}} (groups of 512 sequences: the stage runs 512)"
        in warning
    )
    # unchecked by a plan (a request built outside it): not offered
    (warning,) = _schedule(dp=32, micro_batch=2, fits_without_interleaving=True)
    assert "micro_batch: 1" not in warning
    assert (
        "parallel.vpp: 1 with parallel: {dp: 32, micro_batch: 2, microbatches: 32} (groups of u = 64 sequences: the stage runs 576)"
        in warning
    )
    # a fraction below even the smaller groups: neither helps (0.05 × 2,048 = 102.4 < 512), only the rest
    (warning,) = _schedule(fraction=0.05, dp=32, micro_batch=2)
    assert "micro_batch: 1" not in warning and "vpp: 1" not in warning
    assert "batch_fraction: 0.5" in warning and "20,480 sequences" not in warning  # unchecked: not offered


def test_a_ramp_that_cannot_shrink_offers_a_batch_that_can():
    """Main batch one group (1,024): no fraction below 1 runs less; a main batch of ceil(1/0.3)·1,024 = 4,096
    sequences does."""
    (warning,) = _schedule(main=1024, checked_main_batches={4096: "parallel: {dp: 64}"})
    assert "cannot shrink" in warning and "micro_batch" not in warning and "batch_fraction" not in warning
    assert "4,096 sequences (schedule.global_batch_tokens: 33554432 with parallel: {dp: 64})" in warning
    (warning,) = _schedule(main=1024)  # nothing checked: the warning says so and how to plan without the ramp
    assert "runs no stage below the main batch" in warning and "batch_fraction: 1" in warning


def _plan(tmp_path: Path, text: str) -> str:
    path = tmp_path / "plan.yaml"
    path.write_text(text)
    result = CliRunner().invoke(app, ["plan", str(path), "--format", "json"])
    assert result.exit_code == 0, result.output
    return result.stdout


def test_each_remedy_offered_on_the_405b_plan_runs_the_ramp_as_asked(tmp_path):
    base = EXAMPLE.read_text().replace("schema=../docs", "schema=x")
    ramped = base.replace("  global_batch_tokens: 16M\n", "  global_batch_tokens: 16M\n" + RAMP)
    out = _plan(tmp_path, ramped)
    assert "ramp stage 1 runs 1,024 sequences" in out and "lower micro_batch" not in out
    assert "parallel.vpp: 1" not in out  # 15/32 = 0.47 over the 0.15 cap
    pins = "parallel: {dp: 64, micro_batch: 1, microbatches: 64, pp: 16, vpp: 8}"
    assert (
        f"4,096 sequences (schedule.global_batch_tokens: 33554432 with {pins})" in out
    )  # checked by the plan
    doc = yaml.safe_load(ramped)
    doc["schedule"]["global_batch_tokens"] = 33554432
    doc.setdefault("parallel", {}).update(yaml.safe_load(pins.split(": ", 1)[1]))
    batch_before = [w for w in json.loads(out)["warnings"] if w.startswith("batch:")]
    for remedy in (ramped.replace("batch_fraction: 0.3", "batch_fraction: 0.5"), yaml.safe_dump(doc)):
        warnings = json.loads(_plan(tmp_path, remedy))["warnings"]
        assert not [w for w in warnings if "ramp stage 1" in w]
        assert not [w for w in warnings if w.startswith("batch:") and w not in batch_before]


V1_PLAN = """schema_version: 1
name: v1-ramp
model: llama-3.1-70b
budget: {tokens: 2T}
training: {seq_len: 4096}
cluster: {gpu: h100-sxm, gpus: 512}
parallel: {tp: 8, pp: 4, vpp: 2, micro_batch: 1}
schedule:
  global_batch_tokens: 2097152
  batch_ramp: [{batch_fraction: 0.1, token_fraction: 0.015}]
"""


def test_no_interleaving_is_offered_where_the_layout_passes_without_it(tmp_path):
    """70B TP8 PP4 DP16 v2 on 512 GPUs, main batch 2,097,152 / 4,096 = 512 sequences (m 32): G = 16·4 = 64 is
    above 0.1 × 512 = 51.2, so the stage runs 64 (0.125). At v = 1 the bubble is 3/32 = 0.094 <= 0.15 (memory
    too, by the model), so vpp 1 is offered: groups of u = 16, the stage 48 sequences; and it then warns no more."""
    out = _plan(tmp_path, V1_PLAN)
    assert "batch_fraction: 0.125" in out
    assert (
        "parallel.vpp: 1 with parallel: {dp: 16, micro_batch: 1, microbatches: 32} (groups of u = 16" in out
    )
    assert "ramp stage 1" not in _plan(
        tmp_path, V1_PLAN.replace("vpp: 2", "vpp: 1, dp: 16, microbatches: 32")
    )
