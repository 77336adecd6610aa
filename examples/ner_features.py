"""Features, padded arrays and the entity score of the CoNLL-2002 Spanish NER showcase (a
linear-chain CRF fitted by numpyro_ugm and by python-crfsuite on the same attributes).

* :func:`sentence_features`: per token the feature set of the CRFsuite / sklearn-crfsuite
  tutorial (bias; the lower-cased word, its last 3 and last 2 characters, whether it is
  upper-case, title-case, digits; the POS tag and its first 2 characters; the lower-cased
  word, case and POS features of the previous and next token, or ``BOS`` / ``EOS`` at the
  ends), each a binary indicator string such as ``"word.istitle=True"``, so that both
  libraries see the same 0/1 attributes.
* :func:`build_index` / :class:`FeatureIndex`: attribute strings of the training set to
  integer ids (unknown attributes of new sentences dropped, as CRFsuite drops them).
* :func:`to_arrays`: padded int arrays for the package's learner, in length buckets or
  packed several sentences a row; :func:`tags_of` maps predictions back to tag strings
  in the sentences' order.
* :func:`entity_f1`: entity-level precision, recall and F1 as conlleval computes them for
  IOB2 tags.
"""

from typing import NamedTuple

import numpy as np

#: the 9 IOB2 labels, "O" first (label id 0, also the padding label)
LABELS = ("O", "B-PER", "I-PER", "B-LOC", "I-LOC", "B-ORG", "I-ORG", "B-MISC", "I-MISC")


def _context_features(prefix, word, pos):
    """The features a neighbouring token contributes (the tutorial's -1: / +1: set)."""
    return [f"{prefix}word.lower={word.lower()}", f"{prefix}word.istitle={word.istitle()}",
            f"{prefix}word.isupper={word.isupper()}", f"{prefix}postag={pos}",
            f"{prefix}postag[:2]={pos[:2]}"]


def token_features(sentence, i) -> list[str]:
    """The attribute strings of token ``i`` of ``sentence`` (a list of ``(word, pos, ...)``)."""
    word, pos = sentence[i][0], sentence[i][1]
    out = ["bias", f"word.lower={word.lower()}", f"word[-3:]={word[-3:]}",
           f"word[-2:]={word[-2:]}", f"word.isupper={word.isupper()}",
           f"word.istitle={word.istitle()}", f"word.isdigit={word.isdigit()}",
           f"postag={pos}", f"postag[:2]={pos[:2]}"]
    out += _context_features("-1:", *sentence[i - 1][:2]) if i > 0 else ["BOS"]
    out += (_context_features("+1:", *sentence[i + 1][:2]) if i + 1 < len(sentence)
            else ["EOS"])
    return out


def sentence_features(sentence) -> list[list[str]]:
    """The attribute strings of every token of ``sentence`` (``(word, pos, tag)`` triples)."""
    return [token_features(sentence, i) for i in range(len(sentence))]


class FeatureIndex:
    """Attribute strings seen in training, numbered 0, 1, ... in order of first sight;
    ``num_attributes`` is also the padding id (a row of zero weights in the model)."""

    def __init__(self, names):
        self.names = tuple(names)
        self.ids = {name: i for i, name in enumerate(self.names)}

    @property
    def num_attributes(self) -> int:
        """The number of attributes (= the padding id)."""
        return len(self.names)

    def encode(self, token) -> list[int]:
        """The ids of a token's attribute strings, unknown ones dropped."""
        return [self.ids[a] for a in token if a in self.ids]


def build_index(train_features) -> FeatureIndex:
    """The :class:`FeatureIndex` of every attribute in ``train_features`` (sentences of
    tokens of attribute strings, as :func:`sentence_features` gives)."""
    seen = {}
    for sentence in train_features:
        for token in sentence:
            for a in token:
                seen.setdefault(a, None)
    return FeatureIndex(seen)


def bucket_length(length, scheme: str = "mult8", minimum: int = 8) -> int:
    """The padded length of a sentence of ``length`` tokens: the next multiple of 8
    (``"mult8"``) or power of two (``"pow2"``), at least ``minimum``.

    On esp.train (264,715 tokens, longest sentence 1,238) multiples of 8 pad 11.9% more
    tokens in 21 buckets, powers of two 42.0% in 8 buckets (both with ``minimum=8``).
    """
    if scheme == "pow2":
        padded = 1 << max(int(length) - 1, 0).bit_length()
    elif scheme == "mult8":
        padded = -(-int(length) // 8) * 8
    else:
        raise ValueError(f"bucket_length: scheme must be 'pow2' or 'mult8', got {scheme!r}")
    return max(padded, minimum)


class Bucket(NamedTuple):
    """Rows of one padded length T: ``features`` int32 (R, T, F) attribute ids (padding id
    = ``num_attributes``), ``mask`` bool (R, T) real tokens, ``tags`` int32 (R, T) label
    ids (padding 0), ``spans`` int (S, 4) where each of its S sentences lies: its index
    in the input, its row, its first position and its length."""

    features: np.ndarray
    mask: np.ndarray
    tags: np.ndarray
    spans: np.ndarray


def _pack(lengths, width):
    """First-fit decreasing: ``{row length: [(sentence, row, start), ...]}``, sentences
    shorter than ``width`` in rows of ``width``, each followed by one padded position;
    a longer one alone in a row of the next multiple of ``width``."""
    groups, free = {}, np.zeros(0, np.int64)
    for n in np.argsort(-np.asarray(lengths), kind="stable"):
        length = int(lengths[n])
        if length >= width:
            size = -(-length // width) * width
            rows = groups.setdefault(size, [])
            rows.append((int(n), len(rows), 0))
            continue
        fits = np.flatnonzero(free >= length + 1)
        row = int(fits[0]) if fits.size else len(free)
        if not fits.size:
            free = np.append(free, width)
        groups.setdefault(width, []).append((int(n), row, width - int(free[row])))
        free[row] -= length + 1
    return groups


def to_arrays(sentences, index, labels=LABELS, *, scheme="mult8", minimum=8, width=128,
              features=None, max_features=None) -> list[Bucket]:
    """The sentences as padded arrays, shortest rows first: grouped by
    :func:`bucket_length` (one sentence a row), or packed (``scheme="pack"``: several
    sentences a row of ``width`` positions, each followed by a padded one, which cuts
    ``ugm.models.chain_crf``'s chain; esp.train fits in 2,115 rows of 128 with 3.4%
    padding, plus 7 longer sentences in rows of 256, 384 and 1,280).

    Parameters
    ----------
    sentences : list of lists of (word, pos, tag)
    index : FeatureIndex
    labels : sequence of str
        The label set; a tag's id is its position.
    scheme : {"mult8", "pow2", "pack"}
    minimum : int
        See :func:`bucket_length`.
    width : int
        The row length of ``"pack"``.
    features : list, optional
        ``[sentence_features(s) for s in sentences]`` when already computed.
    max_features : int, optional
        F, the attribute slots of a token (default: the most any token here has; pass the
        training set's to give test arrays the same F).
    """
    label_id = {label: i for i, label in enumerate(labels)}
    features = features or [sentence_features(s) for s in sentences]
    ids = [[index.encode(token) for token in sentence] for sentence in features]
    num_slots = max_features or max(len(t) for sentence in ids for t in sentence)
    if scheme == "pack":
        groups = _pack([len(s) for s in sentences], width)
    else:
        padded = np.array([bucket_length(len(s), scheme, minimum) for s in sentences])
        groups = {int(length): [(int(n), r, 0) for r, n in
                                enumerate(np.flatnonzero(padded == length))]
                  for length in np.unique(padded)}
    buckets = []
    for length in sorted(groups):
        spans = np.array([(n, r, start, len(ids[n])) for n, r, start in groups[length]])
        num_rows = int(spans[:, 1].max()) + 1
        feats = np.full((num_rows, length, num_slots), index.num_attributes, np.int32)
        mask = np.zeros((num_rows, length), bool)
        tags = np.zeros((num_rows, length), np.int32)
        for n, r, start, size in spans:
            for t, token in enumerate(ids[n]):
                if len(token) > num_slots:
                    raise ValueError(f"to_arrays: a token has {len(token)} attributes, more "
                                     f"than max_features={num_slots}")
                feats[r, start + t, :len(token)] = token
            mask[r, start:start + size] = True
            tags[r, start:start + size] = [label_id[tok[2]] for tok in sentences[n]]
        buckets.append(Bucket(feats, mask, tags, spans))
    return buckets


def tags_of(buckets, predicted, labels=LABELS) -> list[list[str]]:
    """Predicted label ids (one (R, T) int array per bucket) as tag strings, one list per
    sentence in the order the buckets were made from (padding dropped)."""
    out = {}
    for bucket, pred in zip(buckets, predicted):
        pred = np.asarray(pred)
        for n, r, start, size in bucket.spans:
            out[int(n)] = [labels[k] for k in pred[r, start:start + size]]
    return [out[n] for n in range(len(out))]


def entities(tags) -> set[tuple[int, int, str]]:
    """The entities of one IOB2 tag sequence, as ``(start, end, type)`` (end exclusive):
    a ``B-X`` and the ``I-X`` that follow it; an ``I-X`` after ``O`` or after another type
    starts an entity, as in conlleval."""
    spans, start, kind = set(), 0, None
    for i, tag in enumerate([*tags, "O"]):
        prefix, _, typ = tag.partition("-")
        if kind is not None and (prefix != "I" or typ != kind):
            spans.add((start, i, kind))
            kind = None
        if prefix == "B" or (prefix == "I" and kind is None):
            start, kind = i, typ
    return spans


class Score(NamedTuple):
    """Entity-level precision, recall, F1 and the counts they come from."""

    precision: float
    recall: float
    f1: float
    correct: int
    true: int
    predicted: int


def entity_f1(true_tag_sequences, predicted_tag_sequences) -> Score:
    """Entity-level precision, recall and F1 over sentences, as conlleval computes them for
    IOB2 tags: an entity is correct when its type, start and end all match."""
    if len(true_tag_sequences) != len(predicted_tag_sequences):
        raise ValueError(f"entity_f1: {len(true_tag_sequences)} true sequences but "
                         f"{len(predicted_tag_sequences)} predicted ones")
    correct = true = predicted = 0
    for n, (gold, guess) in enumerate(zip(true_tag_sequences, predicted_tag_sequences)):
        if len(gold) != len(guess):
            raise ValueError(f"entity_f1: sentence {n} has {len(gold)} true tags but "
                             f"{len(guess)} predicted ones")
        a, b = entities(gold), entities(guess)
        correct, true, predicted = correct + len(a & b), true + len(a), predicted + len(b)
    precision = correct / predicted if predicted else 0.0
    recall = correct / true if true else 0.0
    f1 = 2 * precision * recall / (precision + recall) if correct else 0.0
    return Score(precision, recall, f1, correct, true, predicted)
