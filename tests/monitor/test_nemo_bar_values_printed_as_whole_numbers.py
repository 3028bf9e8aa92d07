"""NeMo's Lightning progress bar prints each value through tqdm's ``format_num`` (the ``.3g`` form where shorter):
``global_step`` 199.0 is printed ``global_step=199``, a whole number followed by the bar's ``, `` separator. The
bar's numbers were read with the thousands separators of torchtitan's ``tps: 12,345``, so ``199,`` was taken for
the value and the command stopped with "internal error: ValueError: could not convert string to float: '0,'".

Hand-derived: bar updates n = 1..39 (``| n/1000 [``), ``global_step=n−1`` printed whole (0 to 38),
``consumed_samples=64·n`` (whole), ``reduced_train_loss=4.250``, ``train_step_timing in s=1.520``: 39 steps 0-38,
each with loss 4.25 and step time 1.52 s (the field after a whole number is read too).
"""

from __future__ import annotations

import numpy as np

from runplan.cli.app import main
from runplan.monitor.readers import read_logs

BAR = (
    "Epoch 0: :   4%|#         | {n}/1000 [00:{n:02d}<20:00, reduced_train_loss=4.250, global_step={step}, "
    "consumed_samples={samples}, train_step_timing in s=1.520]"
)


def _bar_log(tmp_path):
    path = tmp_path / "nemo.log"
    path.write_text("".join("\r" + BAR.format(n=n, step=n - 1, samples=64 * n) for n in range(1, 40)) + "\n")
    return path


def test_whole_number_values_in_the_bar_are_read(tmp_path):
    log = read_logs([_bar_log(tmp_path)])
    assert log.format == "nemo"
    assert log.steps.tolist() == list(range(0, 39))
    assert np.allclose(log.values["loss"], 4.25)
    assert np.allclose(log.values["step_seconds"], 1.52)


def test_the_command_reads_it_without_an_internal_error(tmp_path, capsys):
    try:
        main(["monitor", str(_bar_log(tmp_path))])
    except SystemExit as exit_info:
        assert exit_info.code in (0, None)
    out, err = capsys.readouterr()
    assert "internal error" not in err and "healthy" in out
