"""Every non-obvious flag of a Megatron export says in one line what it sets: DeepSeek-V3's MLA widths, its YaRN
attention-scale coefficients (``--mscale``, ``--mscale-all-dim``: Megatron's help, "Mscale for YaRN RoPE in
multi-latent attention", arguments.py @ d98e8a64) and the routed scaling factor 2.5 (DeepSeek-V3 config.json
``routed_scaling_factor``; Megatron ``--moe-router-topk-scaling-factor``) were written bare."""

from tests.export.test_megatron_moe_router_export import _plan

from runplan.export import export_plan

FLAGS = ("--kv-lora-rank", "--q-lora-rank", "--v-head-dim", "--mscale", "--mscale-all-dim")


def test_deepseek_v3_mla_yarn_and_router_scale_flags_carry_a_comment(tmp_path):
    plan = _plan(tmp_path, "dsv3", "deepseek-v3", 2048, "cp: 1")
    lines = export_plan(plan, "megatron").text.splitlines()
    for flag in (*FLAGS, "--moe-router-topk-scaling-factor"):
        line = next(line for line in lines if line.strip().split(" ")[0] == flag)
        comment = line.partition("  # ")[2]
        assert len(comment) > 10, line
    scale = next(line for line in lines if line.strip().startswith("--moe-router-topk-scaling-factor"))
    assert scale.strip().startswith("--moe-router-topk-scaling-factor 2.5  # ")
