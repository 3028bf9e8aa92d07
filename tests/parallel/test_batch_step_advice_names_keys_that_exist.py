"""When every layout's global batch steps over the range, the advice named `parallelize.global_batch_tolerance` to
`runplan plan` users (no such plan key: a plan holds ±10%) and min/max batch keys beside a target, which only
narrow a target's range (search.batch_range_tokens)."""

from typer.testing import CliRunner

from runplan.cli.app import app

PINS = ["--tp", "8", "--pp", "8", "--mbs", "1", "--microbatches", "16"]  # every layout: 8·1·16·4096 = 524,288


def _text(argv: list[str]) -> str:
    result = CliRunner().invoke(app, argv, env={"COLUMNS": "200"})
    assert result.exit_code == 1, result.output
    return " ".join(result.stderr.split())


def test_a_target_is_moved_or_its_tolerance_widened_by_a_flag_that_exists():
    text = _text(["parallelize", "--model", "70b", "--gpus", "512", *PINS, "--global-batch", "1M"])
    assert "a batch target there (--global-batch), or a wider tolerance around it (--batch-tolerance" in text
    assert "--min-batch" not in text


def test_a_range_without_a_target_is_widened_by_min_and_max():
    text = _text(
        [
            "parallelize",
            "--model",
            "70b",
            "--gpus",
            "512",
            *PINS,
            "--min-batch",
            "600k",
            "--max-batch",
            "900k",
        ]
    )
    assert "or a wider range (--min-batch, --max-batch)" in text


def test_a_plan_user_is_told_the_plan_key_and_that_the_tolerance_is_fixed(tmp_path):
    plan = tmp_path / "p.yaml"
    plan.write_text(
        "schema_version: 1\nname: t\nbudget: {flops: 2e23}\ncluster: {gpu: h100-sxm, gpus: 512}\n"
        "schedule: {global_batch_tokens: 1000000}\n"
        "parallel: {tp: 8, pp: 8, micro_batch: 1, microbatches: 16}\n"
    )
    text = _text(["plan", str(plan)])
    assert "a batch target there (schedule.global_batch_tokens)" in text
    assert "a plan holds ±10%" in text
