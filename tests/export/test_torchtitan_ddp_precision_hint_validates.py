"""The torchtitan DDP precision warning (``_ddp_precision``) tells the user which stack keys to plan with. Under
the torchtitan-fsdp2 preset (fsdp_mixed_precision: true) "autocast_fp32_weights: true" alone is refused by the
Stack (autocast does not go with FSDP mixed precision: exit 2), so the hint must also turn that off; the keys it
names, applied as written, must validate and export without the warning."""

import re

from tests.export._plans import golden_plan, with_layout

from runplan.export import export_plan
from runplan.parallel.stack import Stack


def _ddp_plan(**stack):
    plan = with_layout(
        golden_plan("moe-mixtral-8x7b"), zero=0, ep=1, cp=1, dp=256, microbatches=12
    )  # t = p = c = 1: torchtitan's autocast path
    return plan.model_copy(
        update={"inputs": {**plan.inputs, "stack": {"preset": "torchtitan-fsdp2", **stack}}}
    )


def _precision_warning(plan) -> str:
    (warning,) = [w for w in export_plan(plan, "torchtitan").warnings if w.startswith("precision:")]
    return warning


def _hinted_keys(warning: str) -> dict[str, bool]:
    hint = warning.split("plan with stack ", 1)[1]
    return {key: value == "true" for key, value in re.findall(r"(\w+): (true|false)", hint)}


def test_the_hint_under_the_fsdp2_preset_turns_fsdp_mixed_precision_off():
    keys = _hinted_keys(_precision_warning(_ddp_plan()))
    assert keys == {"autocast_fp32_weights": True, "fsdp_mixed_precision": False}
    Stack(
        preset="torchtitan-fsdp2", **keys
    )  # validates (autocast alone: "does not go with fsdp_mixed_precision")
    result = export_plan(_ddp_plan(**keys), "torchtitan")
    assert not [w for w in result.warnings if w.startswith("precision:")]


def test_the_hint_names_only_autocast_where_fsdp_mixed_precision_is_already_off():
    plan = with_layout(
        golden_plan("moe-mixtral-8x7b"), zero=0, ep=1, cp=1, dp=256, microbatches=12
    )  # the default stack
    assert _hinted_keys(_precision_warning(plan)) == {"autocast_fp32_weights": True}
