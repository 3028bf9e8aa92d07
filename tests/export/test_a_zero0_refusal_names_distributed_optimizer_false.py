"""A plan whose ZeRO-0 comes from ``stack.distributed_optimizer: false`` (ZeRO-0 only, parallel/stack.py) and that
torchtitan 0.2.2 cannot run as DDP is refused at that key, with advice that does not keep it: pinning
``parallel.zero: 3`` beside ``distributed_optimizer: false`` would ask for two contradicting things.

torchtitan 0.2.2 runs DDP (``data_parallel_replicate_degree``, no FSDP) with t > 1 in fp32 (``maybe_enable_amp``,
distributed/utils.py, casts to bf16 only under FSDP), so a ZeRO-0 plan with t = 2 is refused (exit 2)."""

import pytest
from tests._small_plan import small_8b_plan
from tests.export._cli import run_export
from tests.export._plans import golden_plan, with_layout

from runplan.errors import SpecError
from runplan.export import export_plan

PLAN = small_8b_plan(
    "no-distributed-optimizer",
    """parallel:
  tp: 2
stack:
  distributed_optimizer: false
""",
)


def test_torchtitan_refuses_ddp_with_tp_at_distributed_optimizer_false(tmp_path):
    path = tmp_path / "plan.yaml"
    path.write_text(PLAN)
    result = run_export(str(path), "--to", "torchtitan")
    assert result.exit_code == 2
    error = result.stderr.strip()
    assert len(error.splitlines()) == 1, error
    # the key of the plan file that made it ZeRO-0, with its line (14: 'distributed_optimizer: false')
    assert f"{path.name}:14: stack.distributed_optimizer:" in error
    assert "without mixed precision" in error
    # the advice drops the key before it pins ZeRO-3
    assert "remove stack.distributed_optimizer: false" in error and "parallel.zero: 3" in error


def test_a_zero0_chosen_by_the_search_keeps_the_parallel_zero_advice():
    plan = with_layout(golden_plan("70b-512-h100"), zero=0)
    with pytest.raises(SpecError) as info:
        export_plan(plan, "torchtitan")
    assert info.value.where == "parallel.zero"
    assert "distributed_optimizer" not in (info.value.hint or "")


def test_deepspeeds_fp32_accumulation_advice_drops_distributed_optimizer_false(tmp_path):
    # DeepSpeed runs the same plan (ZeRO-0 exports as stage 0) and warns that fp32 accumulation needs ZeRO >= 1
    path = tmp_path / "plan.yaml"
    path.write_text(PLAN)
    result = run_export(str(path), "--to", "deepspeed")
    assert result.exit_code == 0, result.stderr
    text = " ".join(result.stderr.split())
    assert "DeepSpeed without ZeRO rejects fp32 gradient accumulation" in text
    assert "remove stack.distributed_optimizer: false (ZeRO-0 only) and pin parallel.zero: 1" in text
