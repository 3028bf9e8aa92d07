"""Multi-token prediction reaches every export: Megatron-LM trains it (``--mtp-num-layers``,
``--mtp-loss-scaling-factor``, arguments.py at 000c4ac: defaults None and 0.1), torchtitan 0.2.x says it has no
MTP module (v0.2.2 models/deepseek_v3 builds none), DeepSpeed lists it in the architecture; a model without MTP
gets none of it."""

from __future__ import annotations

import json

from tests.export.test_export_architecture import plan_with
from tests.export.test_export_keys import megatron_args

from runplan.export import export_plan


def test_megatron_trains_deepseek_v3s_mtp_module_with_its_loss_weight():
    a = megatron_args(plan_with("deepseek-v3"))
    # arXiv 2412.19437 §2.2: depth D = 1; §4.2: λ = 0.3 for the first 10T tokens
    assert (a.mtp_num_layers, a.mtp_loss_scaling_factor) == (1, 0.3)


def test_megatron_writes_no_mtp_flag_for_a_model_without_it():
    a = megatron_args(plan_with("mixtral-8x7b"))
    assert a.mtp_num_layers is None and a.mtp_loss_scaling_factor == 0.1  # Megatron's defaults: no MTP
    assert "--mtp" not in export_plan(plan_with("mixtral-8x7b"), "megatron").text


def test_torchtitan_warns_that_the_mtp_module_is_not_trained():
    (line,) = [
        w for w in export_plan(plan_with("deepseek-v3"), "torchtitan").warnings if w.startswith("mtp:")
    ]
    assert "builds no multi-token-prediction module" in line and "1 MTP module(s) are not trained" in line
    assert not [
        w for w in export_plan(plan_with("llama-3-70b"), "torchtitan").warnings if w.startswith("mtp:")
    ]


def test_deepspeed_architecture_lists_the_mtp_depth_and_weight():
    written = json.loads(export_plan(plan_with("deepseek-v3"), "deepspeed").text)["runplan"]["architecture"]
    assert (written["mtp_layers"], written["mtp_loss_weight"]) == (1, 0.3)
    plain = json.loads(export_plan(plan_with("llama-3-70b"), "deepspeed").text)["runplan"]["architecture"]
    assert "mtp_layers" not in plain and "mtp_loss_weight" not in plain
