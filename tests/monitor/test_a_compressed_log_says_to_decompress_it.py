"""A compressed log (``train.log.gz``, rotated logs often are) is one line naming the compression and the command
that decompresses it, exit 2, not "is binary, and not a TensorBoard event file (give a text log)"."""

from __future__ import annotations

import bz2
import gzip
import lzma

import pytest

from runplan.cli.app import main

LINES = "".join(
    f" iteration {s:>6}/ 1000 | elapsed time per iteration (ms): 1000.0 | lm loss: 3.000000E+00 |\n"
    for s in range(1, 30)
).encode()


@pytest.mark.parametrize(
    ("name", "compress", "said", "command"),
    [
        ("run.log.gz", gzip.compress, "gzip", "gunzip -k"),
        ("run.log.bz2", bz2.compress, "bzip2", "bunzip2 -k"),
        ("run.log.xz", lzma.compress, "xz", "unxz -k"),
        ("run.log", gzip.compress, "gzip", "gunzip -k"),  # by its content, not its name
    ],
)
def test_a_compressed_log_names_its_compression_and_the_command(
    tmp_path, capsys, name, compress, said, command
):
    path = tmp_path / name
    path.write_bytes(compress(LINES))
    with pytest.raises(SystemExit) as exit_info:
        main(["monitor", str(path)])
    err = capsys.readouterr().err
    assert exit_info.value.code == 2 and len(err.strip().splitlines()) == 1, err
    assert err.startswith(f"runplan: error: LOG: '{path}' is {said}-compressed")
    assert f"decompress it first ({command} " in err
