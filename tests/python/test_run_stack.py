"""stack.py's reading of a level's words: every file they name is hashed into the run's record."""
from tracemod_run import stack


def test_a_path_spec_names_its_traces(tmp_path):
    (tmp_path / "wifi.trace").write_text("1\n")
    (tmp_path / "lte.up").write_text("2\n")
    words = ["--path", "trace=wifi.trace,delay=20", "--path=up-trace=lte.up,down-rate=10mbit", "-v"]
    found = stack.traces_of(words, str(tmp_path))
    assert set(found) == {str((tmp_path / "wifi.trace").resolve()), str((tmp_path / "lte.up").resolve())}


def test_values_of_plain_words_and_options():
    assert stack.values_of("up.trace") == ["up.trace"]
    assert stack.values_of("--uplink-trace=up.trace") == ["up.trace"]
    assert stack.values_of("-v") == []
    assert stack.values_of("rate=10mbit,trace=t") == ["rate=10mbit,trace=t", "10mbit", "t"]
