"""``model: config.json`` in a plan file is read from the plan file's folder, as ``model: {config: ...}`` and a
checkpoint folder are (docs/plan-file.md), not from the directory runplan is started in."""

import json
import os

from tests.monitor.test_peak_memory_against_the_logs_own_stage import CONFIG


def test_a_bare_config_json_name_is_read_beside_the_plan(tmp_path):
    from runplan.cli.common import plan_from_file

    folder = tmp_path / "plans"
    folder.mkdir()
    (folder / "tiny.json").write_text(json.dumps(CONFIG))
    path = folder / "tiny.yaml"
    path.write_text(
        "schema_version: 1\nname: tiny\nmodel: tiny.json\nbudget: {tokens: 1B}\ntraining: {seq_len: 1024}\n"
        "cluster: {gpu: h100-sxm, gpus: 8}\n"
    )
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    cwd = os.getcwd()
    os.chdir(elsewhere)
    try:
        plan = plan_from_file(path)[2]
    finally:
        os.chdir(cwd)
    # 4 layers of 11,274,240 (tests/monitor/test_peak_memory_against_the_logs_own_stage.py), untied 4,096 × 1,024
    # embedding and head, the final norm
    assert plan.model.shape.total_params == 4 * 11_274_240 + 2 * 4096 * 1024 + 1024
