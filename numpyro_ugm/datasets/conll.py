"""The Spanish part of the CoNLL-2002 named-entity task: tokens with their part-of-speech
and IOB2 entity tags, one sentence a list.

Source: Tjong Kim Sang, CoNLL-2002 shared task (EFE news wire, annotated by TALP/UPC and
CLiC/UB), the copy in NLTK's data collection. License: research use in the context of the
shared task only, no commercial use; so it is never downloaded nor shipped, only read from
the folder named by ``NUMPYRO_UGM_DATA`` (``conll2002/esp.train``, ``esp.testa``,
``esp.testb``), each file checked against its pinned sha256. The pinned files are UTF-8
(NLTK's copy; a latin-1 copy of the same data fails the check).
"""

from .files import path_of

#: the splits: training, development ("testa") and test ("testb") sentences
SPLITS = ("train", "testa", "testb")


def read_conll(path) -> list[list[tuple[str, str, str]]]:
    """The sentences of a CoNLL-2002 file: one ``word POS tag`` line a token, an empty
    line between sentences; each sentence a list of ``(word, pos, tag)``."""
    sentences, current = [], []
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            fields = line.split()
            if not fields:
                if current:
                    sentences.append(current)
                    current = []
                continue
            if len(fields) != 3:
                raise ValueError(f"{path}, line {number}: expected 'word POS tag', got "
                                 f"{line.rstrip()!r}")
            current.append(tuple(fields))
    if current:
        sentences.append(current)
    return sentences


def conll2002(split: str = "train") -> list[list[tuple[str, str, str]]]:
    """CoNLL-2002 Spanish NER sentences, each a list of ``(word, pos, tag)`` strings (IOB2
    tags of PER, LOC, ORG, MISC). Research use only: read from ``NUMPYRO_UGM_DATA``
    (``conll2002/esp.<split>``), never downloaded.

    Parameters
    ----------
    split : {"train", "testa", "testb"}
        8,323 training sentences (264,715 tokens), 1,915 development and 1,517 test ones.
    """
    if split not in SPLITS:
        raise ValueError(f"conll2002: split must be one of {SPLITS}, got {split!r}")
    return read_conll(path_of(f"conll2002/esp.{split}"))
