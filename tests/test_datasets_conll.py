"""The CoNLL-2002 Spanish NER reader (numpyro_ugm/datasets/conll.py): research use only, so
read from ``NUMPYRO_UGM_DATA`` alone (a clear error naming the variable and the file
otherwise, never a download); the text format parsed; the pinned training file's counts."""

import pytest

from numpyro_ugm import datasets
from numpyro_ugm.datasets import conll, files


def test_the_reader_parses_tokens_and_sentence_breaks(tmp_path):
    path = tmp_path / "esp.tiny"
    path.write_text("El DA O\nAbogado NC B-PER\nGeneral AQ I-PER\n\n\n- Fg O\n\n"
                    "Madrid NP B-LOC\n", encoding="utf-8")
    assert conll.read_conll(path) == [
        [("El", "DA", "O"), ("Abogado", "NC", "B-PER"), ("General", "AQ", "I-PER")],
        [("-", "Fg", "O")], [("Madrid", "NP", "B-LOC")]]
    path.write_text("El DA\n", encoding="utf-8")
    with pytest.raises(ValueError, match="line 1"):
        conll.read_conll(path)


def test_it_is_read_from_the_data_folder_only(tmp_path, monkeypatch):
    monkeypatch.setenv("NUMPYRO_UGM_DATA", str(tmp_path))
    with pytest.raises(FileNotFoundError, match="conll2002/esp.testb.*NUMPYRO_UGM_DATA.*never"):
        datasets.conll2002("testb")
    monkeypatch.delenv("NUMPYRO_UGM_DATA")
    with pytest.raises(FileNotFoundError, match="esp.train.*license.*NUMPYRO_UGM_DATA"):
        datasets.conll2002("train")
    with pytest.raises(ValueError, match="split"):
        datasets.conll2002("test")


def test_the_pinned_training_file_has_the_documented_counts():
    folder = files.local_folder()
    if folder is None or not (folder / "conll2002" / "esp.train").exists():
        pytest.skip("no CoNLL-2002 in a data folder (NUMPYRO_UGM_DATA) here")
    sentences = datasets.conll2002("train")
    assert len(sentences) == 8323 and sum(map(len, sentences)) == 264715
    tags = {tag for sentence in sentences for _, _, tag in sentence}
    assert tags == {"O"} | {f"{p}-{t}" for p in "BI" for t in ("PER", "LOC", "ORG", "MISC")}
    assert sentences[0][0] == ("Melbourne", "NP", "B-LOC")
