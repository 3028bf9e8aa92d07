"""A plan file has no key for the batch tolerance (only `runplan parallelize --batch-tolerance` sets it; a plan
holds ±10%), so the advice `runplan plan` gives when every layout's batch steps over the range names the flag on
the command line, never the internal path ``parallelize.global_batch_tolerance`` (search._batch_steps)."""

from tests._small_plan import small_8b_plan
from typer.testing import CliRunner

from runplan.cli.app import app
from runplan.cli.flags import paths_for_user

# every layout: d·b·m·s with d = 64, b = 8: steps of 2,097,152 tokens, none within 3M ± 10%
PLAN = small_8b_plan(
    "steps",
    """parallel:
  tp: 1
  pp: 1
  cp: 1
  dp: 64
  micro_batch: 8
schedule:
  global_batch_tokens: 3M
""",
)


def _text(argv: list[str]) -> str:
    result = CliRunner().invoke(app, argv, env={"COLUMNS": "200"})
    assert result.exit_code == 1, result.output
    return " ".join(result.stderr.split())


def test_plan_names_the_parallelize_flag_not_the_internal_path(tmp_path):
    path = tmp_path / "p.yaml"
    path.write_text(PLAN)
    text = _text(["plan", str(path)])
    assert "the nearest are 2,097,152 tokens" in text
    assert "parallelize.global_batch_tolerance" not in text
    assert (
        "a wider tolerance around it (`runplan parallelize PLAN --batch-tolerance` on the command line; "
        "a plan holds ±10%)" in text
    )


def test_parallelize_of_the_plan_names_its_own_flag(tmp_path):
    path = tmp_path / "p.yaml"
    path.write_text(PLAN)
    text = _text(["parallelize", str(path)])
    assert "a wider tolerance around it (--batch-tolerance; a plan holds ±10%)" in text


def test_plan_keys_stay_keys_for_plan_file_commands():
    assert paths_for_user("pin parallel.zero=1", "check") == "pin parallel.zero: 1"
    assert paths_for_user("(parallelize.unknown_option)", "plan") == "(parallelize.unknown_option)"
