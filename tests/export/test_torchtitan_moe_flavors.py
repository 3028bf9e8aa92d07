"""DeepSeek-V3 and Qwen3-30B-A3B export as the flavors torchtitan 0.2.2 registers (models/deepseek_v3/__init__.py
``deepseekv3_args["671B"]``, models/qwen3/__init__.py ``qwen3_args["30B-A3B"]``), with one warning per field where
the flavor builds another model than the catalog's, and a refusal (exit 2) where the model code raises at start-up.
llama3 exports are unchanged (tests/export/test_export_golden.py)."""

from __future__ import annotations

import dataclasses
import tomllib

import pytest
from tests.export._plans import golden_plan
from tests.export.test_export_cli import _run

from runplan.errors import SpecError
from runplan.export import export_plan
from runplan.export._architecture import architecture
from runplan.export._common import engine_data, facts
from runplan.export.torchtitan import TOKENIZER_PLACEHOLDER, _flavor_behaviour

PLAN = """schema_version: 1
name: {name}
model: {model}
budget:
  tokens: 1T
training:
  seq_len: 4096
parallel:
  {pin}
cluster:
  gpu: h100-sxm
  gpus: {gpus}
"""


def _plan_file(folder, name: str, model: str, gpus: int, pin: str):
    path = folder / f"{name}.yaml"
    path.write_text(PLAN.format(name=name, model=model, gpus=gpus, pin=pin), encoding="utf-8")
    return path


def _plan(path):
    from runplan.cli.common import plan_from_file

    return plan_from_file(str(path))[2]


@pytest.fixture(scope="module")
def deepseek(tmp_path_factory):
    """DeepSeek-V3 on 2,048 H100s, CP pinned off (the 671B flavor's flex attention refuses CP)."""
    return _plan(_plan_file(tmp_path_factory.mktemp("v3"), "dsv3", "deepseek-v3", 2048, "cp: 1"))


@pytest.fixture(scope="module")
def qwen(tmp_path_factory):
    """Qwen3-30B-A3B on 256 H100s, PP pinned off (torchtitan's qwen3 has no pipelining)."""
    return _plan(_plan_file(tmp_path_factory.mktemp("q3"), "qwen3", "qwen3-30b-a3b", 256, "pp: 1"))


def _model_warnings(warnings: list[str], name: str) -> list[str]:
    """The warnings the [model] comparison writes (the stack's own 'attention:' warning left out)."""
    return [
        w
        for w in warnings
        if w.startswith(("architecture:", "init:", "model:")) or f"torchtitan's {name}" in w
    ]


def test_flavor_data_holds_the_values_of_the_tagged_source() -> None:
    """Spot values from deepseekv3_args['671B'] / qwen3_args['30B-A3B'] and their ModelArgs defaults (v0.2.2)."""
    doc = engine_data("torchtitan_flavors")
    v3, q3 = doc["deepseek_v3"]["671B"], doc["qwen3"]["30B-A3B"]
    assert (v3["n_layers"], v3["dim"], v3["n_heads"], v3["ffn_hidden"], v3["vocab_size"]) == (
        61,
        7168,
        128,
        18432,
        129280,
    )
    assert (v3["q_lora_rank"], v3["kv_lora_rank"], v3["qk_rope_head_dim"], v3["v_head_dim"]) == (
        1536,
        512,
        64,
        128,
    )
    assert (v3["n_experts"], v3["top_k"], v3["n_shared_experts"], v3["expert_ffn_hidden"]) == (
        256,
        8,
        1,
        2048,
    )
    assert (v3["n_dense_layers"], v3["router_groups"], v3["router_group_topk"], v3["router_topk_scale"]) == (
        3,
        8,
        4,
        2.5,
    )
    assert (v3["norm_eps"], v3["rope_theta"], v3["attn_type"], v3["attn_mask_type"]) == (
        1e-5,
        1e4,
        "flex",
        "block_causal",
    )
    assert (q3["n_layers"], q3["dim"], q3["n_heads"], q3["n_kv_heads"], q3["head_dim"]) == (
        48,
        2048,
        32,
        4,
        128,
    )
    assert (q3["n_experts"], q3["top_k"], q3["n_shared_experts"], q3["expert_ffn_hidden"]) == (128, 8, 0, 768)
    assert (q3["norm_eps"], q3["rope_theta"], q3["vocab_size"], q3["pipelining"]) == (
        1e-6,
        1e6,
        151936,
        False,
    )


def test_deepseek_v3_exports_as_the_671b_flavor_with_its_differences(deepseek) -> None:
    result = export_plan(deepseek, "torchtitan")
    assert tomllib.loads(result.text)["model"] == {
        "name": "deepseek_v3",
        "flavor": "671B",
        "hf_assets_path": TOKENIZER_PLACEHOLDER,
    }
    assert _model_warnings(result.warnings, "deepseek_v3") == [
        "architecture: torchtitan's deepseek_v3 '671B' flavor has norm_eps = 1e-05 where deepseek-v3 has 1e-06; "
        "register a flavor with the catalog's value",
        "init: torchtitan initialises with std 0.02 (output projections depth-scaled), not 0.006",
        "norm: torchtitan's deepseek_v3 model builds its final RMSNorm without eps, so torch's default "
        "(torch.finfo(dtype).eps) applies there, not deepseek-v3's 1e-06; no flavor setting changes it "
        "(torchtitan/models/deepseek_v3/model/model.py)",
        "attention: torchtitan's deepseek_v3 '671B' flavor runs flex attention with block_causal masks (each token "
        "attends only within its own document, split at the tokenizer's EOS) where the plan timed causal attention "
        "over whole 4096-token sequences: another model and another step time; register a flavor with attn_type = "
        '"sdpa" and attn_mask_type = "causal"',
        "rope: torchtitan's deepseek_v3 applies its YaRN scaling (x40.0) only when training.seq_len > 4096; at 4096 "
        "it trains unscaled RoPE (theta 10000.0), as DeepSeek-V3's 4K pre-training did (arXiv 2412.19437 section "
        "4.3 adds YaRN after pre-training), not the catalog's yarn x40.0 (original_max_position_embeddings 4096, "
        "beta_fast 32.0, beta_slow 1.0, mscale 1.0, mscale_all_dim 1.0)",
    ]


def test_deepseek_v3_past_4096_tokens_gets_torchtitans_yarn(deepseek) -> None:
    """precompute_freqs_cis scales by YaRN when seq_len > original_seq_len 4096: the catalog's scaling, no warning."""
    f = dataclasses.replace(facts(deepseek), seq_len=8192)
    spec = engine_data("torchtitan_flavors")["deepseek_v3"]["671B"]
    out = _flavor_behaviour(f, architecture(deepseek), "deepseek_v3", "671B", spec)
    assert not any(w.startswith("rope:") for w in out) and len(out) == 2


def test_qwen3_30b_a3b_exports_as_its_flavor_with_only_the_router_difference(qwen) -> None:
    result = export_plan(qwen, "torchtitan")
    assert tomllib.loads(result.text)["model"] == {
        "name": "qwen3",
        "flavor": "30B-A3B",
        "hf_assets_path": TOKENIZER_PLACEHOLDER,
    }
    assert (
        _model_warnings(result.warnings, "qwen3")
        == [
            "router: torchtitan's qwen3 trains the router with no load balancing (no auxiliary loss; its TrainSpec "
            "builds optimizers without the expert-bias update, so expert_bias stays 0), where qwen3-30b-a3b has a "
            "balance loss over the global batch of coefficient 0.001 (router_aux_loss_coef): expert loads can drift "
            "from the even load the plan timed"
        ]
    )  # the catalog's Qwen3-30B-A3B: config.json router_aux_loss_coef 0.001, global batch (arXiv 2505.09388 §2)


@pytest.mark.parametrize(
    ("model", "gpus", "pin", "where", "message"),
    [
        ("deepseek-v3", 2048, "cp: 2", "parallel.cp", "'671B' flavor uses flex attention"),
        ("qwen3-30b-a3b", 256, "pp: 2", "parallel.pp", "qwen3 model has no pipeline parallelism"),
    ],
)
def test_layouts_the_flavor_raises_on_are_refused(tmp_path, model, gpus, pin, where, message) -> None:
    """torchtitan raises at start-up: deepseek_v3 parallelize.py (CP needs SDPA), train.py (no pipelining_fn)."""
    path = _plan_file(tmp_path, "refused", model, gpus, pin)
    with pytest.raises(SpecError, match=message) as caught:
        export_plan(_plan(path), "torchtitan")
    assert caught.value.where == where and caught.value.hint == f"pin {where}: 1, or export to megatron"
    result = _run(str(path), "--to", "torchtitan")
    assert result.exit_code == 2 and "Traceback" not in result.output


def test_llama3_flavors_get_no_model_code_warnings() -> None:
    plan = golden_plan("70b-512-h100")
    spec = engine_data("torchtitan_flavors")["llama3"]["70B"]
    assert tomllib.loads(export_plan(plan, "torchtitan").text)["model"]["name"] == "llama3"
    assert _flavor_behaviour(facts(plan), architecture(plan), "llama3", "70B", spec) == []


def test_a_flex_attention_flavor_is_not_told_it_runs_sdpa_flash_attention(deepseek, qwen) -> None:
    # the plan timed cuDNN attention (default stack); torchtitan's deepseek_v3 671B runs flex attention (its own
    # 'attention:' warning above), qwen3 30B-A3B runs SDPA, whose FlashAttention-2 warning stays
    assert not [w for w in export_plan(deepseek, "torchtitan").warnings if "SDPA's FlashAttention-2" in w]
    assert [w for w in export_plan(qwen, "torchtitan").warnings if "SDPA's FlashAttention-2" in w]


def test_deepseek_v3_float8_tensorwise_under_tp_is_refused(tmp_path) -> None:
    # models/deepseek_v3/infra/parallelize.py @ v0.2.2 raises "float8 tensorwise TP is not tested for deepseekv3"
    plan = tmp_path / "dsv3-fp8.yaml"
    text = PLAN.format(name="dsv3-fp8", model="deepseek-v3", gpus=2048, pin="{cp: 1, tp: 8}").replace(
        "parallel:\n  {cp: 1, tp: 8}", "parallel: {cp: 1, tp: 8}"
    )
    plan.write_text(text + "stack: {preset: torchtitan-fsdp2, precision: fp8, fp8_recipe: tensorwise}\n")
    result = _run(str(plan), "--to", "torchtitan")
    assert result.exit_code == 2, result.output
    assert (
        "stack.fp8_recipe: torchtitan 0.2.2's deepseek_v3 refuses float8 tensorwise scaling" in result.stderr
    )
    assert "set stack.fp8_recipe: rowwise, or pin parallel.tp: 1" in result.stderr
