"""Exports of Gemma-like shapes: Megatron-LM writes a sliding window (--window-size, --window-attn-skip-freq) and
refuses GeGLU and post-norms; torchtitan 0.2.2 refuses all three; DeepSpeed lists them for the model code."""

import json

import pytest
from tests.export._plans import golden_plan, parse_script_args
from tests.export.test_export_keys import megatron_args

from runplan.errors import SpecError
from runplan.export import export_plan


def _with_shape(plan, **changes):
    shape = plan.model.shape.model_copy(update=changes)
    return plan.model_copy(update={"model": plan.model.model_copy(update={"shape": shape})})


GEMMA = {"mlp": "geglu", "post_norms": True, "sliding_window": 4096, "global_every": 2}


def test_megatron_writes_the_window_as_transformer_engine_takes_it():
    # a window of w keys is TE's (w-1, 0); layers k, 2k, ... global is --window-attn-skip-freq k; both flags are in
    # the checked-in Megatron list and parse with its types (megatron_args)
    plan = _with_shape(golden_plan("70b-512-h100"), sliding_window=4096, global_every=2)
    a = megatron_args(plan)
    assert (a.window_size, a.window_attn_skip_freq) == ("(4095,0)", "2")
    every_layer = _with_shape(golden_plan("70b-512-h100"), sliding_window=4096)
    args = parse_script_args(export_plan(every_layer, "megatron").text)
    assert "--window-size" in args and "--window-attn-skip-freq" not in args


def test_megatron_writes_linear_rope_scaling_as_an_integer_interpolation_factor():
    from runplan.model import RopeScaling

    linear = RopeScaling(type="linear", factor=8.0)
    a = megatron_args(_with_shape(golden_plan("70b-512-h100"), rope_scaling=linear))
    assert a.rotary_seq_len_interpolation_factor == 8 and not a.use_rope_scaling
    with pytest.raises(SpecError, match="--rotary-seq-len-interpolation-factor is an integer"):
        export_plan(
            _with_shape(golden_plan("70b-512-h100"), rope_scaling=RopeScaling(type="linear", factor=2.5)),
            "megatron",
        )


def test_torchtitan_sends_a_window_alone_to_megatron():
    plan = _with_shape(golden_plan("70b-512-h100"), sliding_window=1024)
    with pytest.raises(SpecError) as error:
        export_plan(plan, "torchtitan")
    assert "export to megatron (--window-size)" in (error.value.hint or "")


@pytest.mark.parametrize(
    "change, message",
    [
        ({"mlp": "geglu"}, "no GeGLU MLP with a tanh-GeLU gate"),
        ({"post_norms": True}, "no norm after attention"),
    ],
)
def test_megatron_refuses_what_it_cannot_build(change, message):
    with pytest.raises(SpecError, match=message):
        export_plan(_with_shape(golden_plan("70b-512-h100"), **change), "megatron")


@pytest.mark.parametrize(
    "change, kind, what",
    [
        ({"mlp": "geglu"}, "Gemma-like model", "GeGLU MLP"),
        ({"post_norms": True}, "Gemma-like model", "post-norms"),
        ({"sliding_window": 1024}, "sliding-window attention", "1,024-token sliding window"),
    ],
)
def test_torchtitan_refuses_gemma_blocks(change, kind, what):
    with pytest.raises(
        SpecError, match=f"torchtitan 0.2.2 has no {kind}: .* build none of the model's {what}"
    ):
        export_plan(_with_shape(golden_plan("70b-512-h100"), **change), "torchtitan")


def test_torchtitan_takes_a_window_no_shorter_than_the_sequence():
    # Mistral 7B v0.1's 4,096-key window at a 4,096-token sequence (or shorter) masks nothing: full attention
    plan = golden_plan("70b-512-h100")
    seq_len = round(
        plan.schedule.batch_stages[-1].global_batch_tokens
        / plan.schedule.batch_stages[-1].global_batch_sequences
    )
    export_plan(_with_shape(plan, sliding_window=seq_len), "torchtitan")


def test_deepspeed_lists_the_gemma_fields_for_the_model_code():
    text = export_plan(_with_shape(golden_plan("70b-512-h100"), **GEMMA), "deepspeed").text
    listing = json.loads(text)["runplan"]["architecture"]
    assert listing["mlp"].startswith("geglu")
    assert (listing["post_norms"], listing["sliding_window"], listing["global_every"]) == (True, 4096, 2)
    plain = json.loads(export_plan(golden_plan("70b-512-h100"), "deepspeed").text)["runplan"]["architecture"]
    assert not {"mlp", "post_norms", "sliding_window"} & set(plain)
