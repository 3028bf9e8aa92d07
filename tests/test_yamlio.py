import pytest

from runplan.errors import SpecError
from runplan.yamlio import MAX_FILE_BYTES, load_yaml_file, load_yaml_text


def test_lines_are_recorded_for_dotted_paths():
    loaded = load_yaml_text("a: 1\nb:\n  c: 3e-4\n  d:\n    - 1\n    - x: 2\n", "p.yaml")
    assert loaded.data == {"a": 1, "b": {"c": "3e-4", "d": [1, {"x": 2}]}}
    assert loaded.lines[("b", "c")] == 3
    assert loaded.lines[("b", "d", 1, "x")] == 6
    assert loaded.where(("b", "c", "missing")) == "p.yaml:3"


def test_duplicate_keys_are_refused_with_both_lines():
    with pytest.raises(SpecError) as info:
        load_yaml_text("cluster:\n  gpus: 8\n  gpus: 16\n", "plan.yaml")
    text = str(info.value)
    assert text.startswith("plan.yaml:3: cluster.gpus: duplicate key 'gpus' (first on line 2)")


def test_alias_bomb_is_refused_quickly():
    lines = ['a: &a ["x","x","x","x","x","x","x","x","x","x"]']
    for i in range(1, 10):
        prev, cur = chr(96 + i), chr(97 + i)
        lines.append(f"{cur}: &{cur} [" + ",".join([f"*{prev}"] * 10) + "]")
    with pytest.raises(SpecError, match="expands to more than"):
        load_yaml_text("\n".join(lines), "bomb.yaml")


def test_small_aliases_are_fine():
    loaded = load_yaml_text("base: &b {x: 1}\nother: *b\nmerged:\n  <<: *b\n  y: 2\n")
    assert loaded.data["merged"] == {"x": 1, "y": 2}


def test_syntax_error_names_the_line():
    with pytest.raises(SpecError, match=r"^p.yaml:3: not valid YAML"):
        load_yaml_text("a: 1\nb: [1,\nc: }\n", "p.yaml")


def test_oversized_and_missing_files(tmp_path):
    big = tmp_path / "big.yaml"
    big.write_text("x: " + "1" * (MAX_FILE_BYTES + 10))
    with pytest.raises(SpecError, match="larger than"):
        load_yaml_file(big)
    with pytest.raises(SpecError, match="cannot read file"):
        load_yaml_file(tmp_path / "nope.yaml")


def test_python_tags_are_not_executed():
    with pytest.raises(SpecError):
        load_yaml_text("x: !!python/object/apply:os.system ['echo hi']\n")
