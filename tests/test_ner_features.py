"""The NER showcase's features, arrays and entity score (examples/ner_features.py), on
hand-made sentences: no data needed.

* ``entity_f1`` counts entities as conlleval does for IOB2: a maximal B-X I-X... span, a
  stray I-X starting an entity, a type change ending one, exact type-and-span matches.
* ``sentence_features`` gives the tutorial's binary attribute strings; ``to_arrays`` pads
  them into length buckets with the padding id and label 0, and ``tags_of`` undoes it.
"""

import importlib.util
from pathlib import Path

import numpy as np
import pytest

_PATH = Path(__file__).resolve().parents[1] / "examples" / "ner_features.py"
_SPEC = importlib.util.spec_from_file_location("ner_features", _PATH)
nf = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(nf)


def test_entities_follow_conlleval_for_iob2():
    tags = ["B-PER", "I-PER", "O", "I-LOC", "I-LOC", "B-ORG", "B-ORG", "I-MISC", "I-PER"]
    assert nf.entities(tags) == {(0, 2, "PER"), (3, 5, "LOC"), (5, 6, "ORG"), (6, 7, "ORG"),
                                 (7, 8, "MISC"), (8, 9, "PER")}
    assert nf.entities(["O", "O"]) == set() and nf.entities([]) == set()
    assert nf.entities(["I-ORG"]) == {(0, 1, "ORG")}  # a stray I- at the start


def test_entity_f1_counts_exact_type_and_span_matches():
    true = [["B-PER", "I-PER", "O", "B-LOC"], ["B-ORG", "I-ORG", "I-ORG"], ["O"]]
    pred = [["B-PER", "O", "O", "B-LOC"],     # PER cut short: wrong; LOC right
            ["I-ORG", "I-ORG", "I-ORG"],      # stray I- start, same span: right
            ["B-MISC"]]                       # a spurious entity
    score = nf.entity_f1(true, pred)
    assert (score.correct, score.true, score.predicted) == (2, 3, 4)
    assert score.precision == pytest.approx(0.5) and score.recall == pytest.approx(2 / 3)
    assert score.f1 == pytest.approx(2 * 0.5 * (2 / 3) / (0.5 + 2 / 3))
    wrong_type = nf.entity_f1([["B-LOC", "I-LOC"]], [["B-ORG", "I-ORG"]])
    assert wrong_type.f1 == 0.0 and wrong_type.correct == 0
    # entities end at a sentence boundary: I-PER opening the next sentence is a new one
    split = nf.entity_f1([["B-PER"], ["B-PER"]], [["B-PER"], ["I-PER"]])
    assert split.f1 == 1.0
    assert nf.entity_f1([["O"]], [["O"]]).f1 == 0.0
    with pytest.raises(ValueError, match="sentence 0"):
        nf.entity_f1([["O"]], [["O", "O"]])


SENTENCES = [[("El", "DA", "O"), ("Abogado", "NC", "B-PER"), ("ONU", "NP", "B-ORG")],
             [("Madrid", "NP", "B-LOC")],
             [("en", "SP", "O")] * 9 + [("2000", "Z", "O")]]


def test_sentence_features_are_the_tutorials_binary_attributes():
    first, middle, last = nf.sentence_features(SENTENCES[0])
    assert "BOS" in first and "EOS" in last and "BOS" not in middle
    assert {"bias", "word.lower=abogado", "word[-3:]=ado", "word[-2:]=do",
            "word.isupper=False", "word.istitle=True", "word.isdigit=False", "postag=NC",
            "postag[:2]=NC", "-1:word.lower=el", "-1:postag=DA", "+1:word.isupper=True",
            "+1:postag[:2]=NP"} <= set(middle)
    assert len(middle) == 19 and len(set(middle)) == 19 and len(first) == 15
    assert nf.sentence_features([("2000", "Z", "O")]) == [[
        "bias", "word.lower=2000", "word[-3:]=000", "word[-2:]=00", "word.isupper=False",
        "word.istitle=False", "word.isdigit=True", "postag=Z", "postag[:2]=Z", "BOS", "EOS"]]


def test_arrays_are_padded_in_buckets_and_map_back():
    index = nf.build_index(nf.sentence_features(s) for s in SENTENCES[:2])
    assert index.names[0] == "bias" and index.encode(["bias", "unseen"]) == [0]
    buckets = nf.to_arrays(SENTENCES, index)
    assert [b.features.shape[:2] for b in buckets] == [(2, 8), (1, 16)]
    short, long = buckets
    np.testing.assert_array_equal(short.spans, [[0, 0, 0, 3], [1, 1, 0, 1]])
    assert short.features.dtype == short.tags.dtype == np.int32 and short.mask.dtype == bool
    np.testing.assert_array_equal(short.mask.sum(1), [3, 1])
    np.testing.assert_array_equal(short.tags[0, :4], [0, 1, 5, 0])
    assert short.features.shape[2] == 19  # the most attributes a token has
    assert np.all(short.features[0, 3:] == index.num_attributes)  # padded tokens
    assert np.all(long.features[0, 0, 8:] == index.num_attributes)  # unseen ones dropped
    assert [b.features.shape[1] for b in nf.to_arrays(SENTENCES, index, scheme="pow2",
                                                      minimum=1)] == [1, 4, 16]
    predicted = [b.tags for b in buckets]
    assert nf.tags_of(buckets, predicted) == [[t for *_, t in s] for s in SENTENCES]


def test_packed_rows_hold_several_sentences_cut_by_padding_and_map_back():
    """``scheme="pack"``: first-fit decreasing into rows of ``width``, each sentence
    followed by a padded position; a sentence as long as a row gets one of its own."""
    index = nf.build_index(nf.sentence_features(s) for s in SENTENCES)
    lengths = [len(s) for s in SENTENCES]
    short, long = nf.to_arrays(SENTENCES, index, scheme="pack", width=8)
    assert short.features.shape[:2] == (1, 8) and long.features.shape[:2] == (1, 16)
    # the longest short sentence first, then the others after its padded position
    np.testing.assert_array_equal(short.spans, [[0, 0, 0, 3], [1, 0, 4, 1]])
    np.testing.assert_array_equal(short.mask[0], [1, 1, 1, 0, 1, 0, 0, 0])
    np.testing.assert_array_equal(long.spans, [[2, 0, 0, lengths[2]]])
    assert np.all(short.features[~short.mask] == index.num_attributes)
    assert np.all(short.tags[~short.mask] == 0)
    buckets = [short, long]
    assert nf.tags_of(buckets, [b.tags for b in buckets]) == [[t for *_, t in s]
                                                              for s in SENTENCES]
