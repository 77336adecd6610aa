"""Named-entity recognition on CoNLL-2002 Spanish with a linear-chain CRF: the peer,
python-crfsuite's L-BFGS, on the CRFsuite tutorial's features (examples/ner_features.py),
scored by entity-level F1 on esp.testb.

How a fit of the package is to be matched to it:

* The weights. ``feature.possible_states`` and ``feature.possible_transitions`` are on, so
  CRFsuite's parameters are exactly one weight per (attribute, label) pair for every
  attribute seen in training and one per (label, label) transition: A x L + L x L
  (A = 76,691 attributes, L = 9 labels), no start or end weights. That is the package
  model's weight table (attribute ids of ``ner_features.to_arrays``, padding id A a zero
  row). All attributes are binary (value 1 when present).
* The objective. CRFsuite's L-BFGS (chokkan/crfsuite, ``lib/crf/src/train_lbfgs.c``,
  ``lbfgs_evaluate``) minimises ``f + c2 * sum(w**2)`` (``f += c2 * norm``, gradient
  ``g += 2 * c2 * w``), where ``f`` is ``-sum_i log p(y_i | x_i)`` summed over the
  training sentences (``crf1d_encode.c``, ``encoder_objective_and_gradients_batch``:
  ``logl += logp * seq->weight``, instance weight 1, ``*f = -logl``). c1 = 0: no L1 term.
  A ``Normal(0, sigma)`` prior on every weight adds ``sum(w**2) / (2 sigma**2)``, so the
  MAP objective with the log-likelihood summed over sentences is the same for
  ``sigma = 1 / sqrt(2 c2)`` (:func:`sigma_for`): c2 = 0.1 -> sigma = 2.236, c2 = 1 ->
  sigma = 0.707. The script recomputes that objective at CRFsuite's fitted weights
  (:func:`map_objective`, numpy, on the package's padded arrays) and prints it beside
  CRFsuite's last logged loss.
* L-BFGS: CRFsuite's defaults (6 memories, More-Thuente line search, stops when the loss
  improves by less than 1e-5 relatively over 10 iterations) up to ``--max-iterations``.
  Its per-iteration seconds are its own log's (``clock()``: CPU time of the one thread
  it uses); an iteration may evaluate the objective more than once (line-search trials).

The package fits the sentences packed several to a row of 128 positions
(``Data.train_packed``: a padded position after each sentence cuts the chain; 2,115 rows and three longer
groups, 3.4% padding), so one L-BFGS step is one pass over four arrays. A side is a
function added to :data:`SIDES` beside ``crfsuite``. Run:
``python benchmarks/bench_ner_crf.py [--c2 0.1] [--max-iterations 100] [--only crfsuite]``.
It needs the data (``NUMPYRO_UGM_DATA``, research use only) and python-crfsuite
(``pip install -e '.[bench]'``); without either it says so and stops.
"""

import argparse
import importlib.util
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import NamedTuple

import numpy as np
from _report import report

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))
import ner_features as nf  # noqa: E402

from numpyro_ugm import datasets  # noqa: E402


class Data(NamedTuple):
    """Sentences, their attribute strings, the attribute index and the padded arrays:
    one sentence a row in length buckets (for the numpy objective) and packed rows (for
    the package's fit and prediction)."""

    train: list
    test: list
    train_features: list
    test_features: list
    index: nf.FeatureIndex
    train_buckets: list
    train_packed: list
    test_packed: list


def sigma_for(c2):
    """The prior scale whose MAP objective is CRFsuite's: Normal(0, 1/sqrt(2 c2))."""
    return 1.0 / np.sqrt(2.0 * c2)


def load_data(width=128):
    """esp.train and esp.testb as :class:`Data` (None, said, when the data are absent);
    ``width``: the packed rows' length."""
    try:
        train, test = datasets.conll2002("train"), datasets.conll2002("testb")
    except FileNotFoundError as err:
        print(f"no CoNLL-2002 data: {err}")
        return None
    train_features = [nf.sentence_features(s) for s in train]
    test_features = [nf.sentence_features(s) for s in test]
    index = nf.build_index(train_features)
    train_buckets = nf.to_arrays(train, index, features=train_features)
    slots = train_buckets[0].features.shape[2]
    train_packed = nf.to_arrays(train, index, scheme="pack", width=width,
                                features=train_features, max_features=slots)
    test_packed = nf.to_arrays(test, index, scheme="pack", width=width,
                               features=test_features, max_features=slots)
    return Data(train, test, train_features, test_features, index, train_buckets,
                train_packed, test_packed)


def describe(data):
    """Print the attribute count and the sentences, rows and padding of the arrays."""
    print(f"attributes {data.index.num_attributes}, labels {len(nf.LABELS)}, attribute "
          f"slots per token {data.train_buckets[0].features.shape[2]}")
    for name, buckets in (("train", data.train_buckets), ("train, packed", data.train_packed),
                          ("testb, packed", data.test_packed)):
        tokens = sum(int(b.mask.sum()) for b in buckets)
        padded = sum(b.mask.size for b in buckets)
        print(f"{name}: {sum(len(b.spans) for b in buckets)} sentences, {tokens} tokens, "
              f"{len(buckets)} buckets, padding {100 * (padded - tokens) / tokens:.1f}%")
        print("  length:rows " + " ".join(f"{b.mask.shape[1]}:{len(b.mask)}"
                                          for b in buckets))


def _logsumexp(x, axis):
    top = x.max(axis=axis, keepdims=True)
    return np.log(np.exp(x - top).sum(axis=axis)) + np.squeeze(top, axis)


def chain_log_likelihood(bucket, state, transitions):
    """log p(tags | features) of each sentence of a bucket, by the forward algorithm
    (numpy, float64): ``state`` (A + 1, L) weights with a zero padding row,
    ``transitions`` (L, L) from label to label."""
    scores = state[bucket.features].sum(axis=2)  # (N, T, L)
    mask, tags = bucket.mask, bucket.tags
    alpha = scores[:, 0]
    for t in range(1, mask.shape[1]):
        nxt = _logsumexp(alpha[:, :, None] + transitions[None], axis=1) + scores[:, t]
        alpha = np.where(mask[:, t, None], nxt, alpha)
    gold = (np.take_along_axis(scores, tags[..., None], 2)[..., 0] * mask).sum(1)
    gold += (transitions[tags[:, :-1], tags[:, 1:]] * mask[:, 1:]).sum(1)
    return gold - _logsumexp(alpha, axis=1)


def map_objective(buckets, state, transitions, c2):
    """CRFsuite's L-BFGS objective: -sum over sentences of log p + c2 * |w|^2 (the
    negative log posterior of a Normal(0, 1/sqrt(2 c2)) prior, up to a constant)."""
    nll = -sum(chain_log_likelihood(b, state, transitions).sum() for b in buckets)
    return nll + c2 * (np.sum(state ** 2) + np.sum(transitions ** 2))


def crfsuite_weights(tagger, index):
    """A fitted CRFsuite model's weights as the package's tables: state (A + 1, L) with a
    zero padding row, transitions (L, L), in ``nf.LABELS`` order."""
    info = tagger.info()
    label = {name: k for k, name in enumerate(nf.LABELS)}
    state = np.zeros((index.num_attributes + 1, len(nf.LABELS)))
    for (attribute, name), w in info.state_features.items():
        state[index.ids[attribute], label[name]] = w
    transitions = np.zeros((len(nf.LABELS), len(nf.LABELS)))
    for (a, b), w in info.transitions.items():
        transitions[label[a], label[b]] = w
    return state, transitions


def crfsuite_side(data, c2, max_iterations):
    """Fit python-crfsuite (L-BFGS, L2 only) on esp.train and score it on esp.testb."""
    import pycrfsuite
    trainer = pycrfsuite.Trainer(algorithm="lbfgs", verbose=False)
    t = time.perf_counter()
    for features, sentence in zip(data.train_features, data.train):
        trainer.append(features, [tag for *_, tag in sentence])
    append_s = time.perf_counter() - t
    trainer.set_params({"c1": 0.0, "c2": c2, "max_iterations": max_iterations,
                        "feature.possible_states": True,
                        "feature.possible_transitions": True})
    with tempfile.TemporaryDirectory() as folder:
        model = os.path.join(folder, "ner.crfsuite")
        t = time.perf_counter()
        trainer.train(model)
        train_s = time.perf_counter() - t
        tagger = pycrfsuite.Tagger()
        tagger.open(model)
        predicted = [tagger.tag(features) for features in data.test_features]
        state, transitions = crfsuite_weights(tagger, data.index)
        tagger.close()
    log = trainer.logparser
    iterations = log.iterations
    seconds = [it["time"] for it in iterations]
    score = nf.entity_f1([[tag for *_, tag in s] for s in data.test], predicted)
    return {"score": score, "train_s": train_s, "append_s": append_s,
            "featgen_s": log.featgen_seconds, "num_features": log.featgen_num_features,
            "iterations": len(iterations), "median_iteration_s": statistics.median(seconds),
            "mean_iteration_s": sum(seconds) / len(seconds),
            "evaluations": sum(it["linesearch_trials"] for it in iterations),
            "last_loss": iterations[-1]["loss"],
            "objective_recomputed": map_objective(data.train_buckets, state, transitions,
                                                  c2)}


def _package_fit(data, c2, num_steps, progress_bar=True):
    """``ugm.fit_exact`` of ``ugm.models.chain_crf`` on the packed training rows (MAP with
    CRFsuite's L2 as a Normal prior; exact log Z and gradients by the forward algorithm
    of the elimination on each row's chain, cut between sentences); its time and
    result."""
    from numpyro.infer import init_to_mean

    import numpyro_ugm as ugm
    first = data.train_packed[0]
    m = ugm.UGM(ugm.models.chain_crf, features=first.features[0], mask=first.mask[0],
                num_labels=len(nf.LABELS), num_features=data.index.num_attributes,
                prior_scale=float(sigma_for(c2)), init_strategy=init_to_mean)
    t = time.perf_counter()
    result = ugm.fit_exact(m, [{"y": b.tags} for b in data.train_packed],
                           inputs=[{"features": b.features, "mask": b.mask}
                                   for b in data.train_packed],
                           num_steps=num_steps, progress_bar=progress_bar)
    return m, result, time.perf_counter() - t


def package_side(data, c2, max_iterations):
    """The package: a first fit of as many steps as one chunk of the main fit (tracing,
    structure, compiling the program the main fit runs), the same fit again (set-up on
    the compiled program and those steps), then the fit of ``max_iterations`` L-BFGS
    steps; exact MAP labels (Viterbi, ``ugm.predict(..., "map")``) on esp.testb. The
    seconds per iteration are the main fit's minus the second's over the steps only the
    main fit took (set-up and the first steps, whose line searches try more points,
    cancel)."""
    import warnings

    import numpyro_ugm as ugm
    from numpyro_ugm.runtime.runloop import capacity, chunk_size
    warm_up = capacity(chunk_size(max_iterations + 1, True)) - 1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # unconverged at max_iterations
        _, _, first_s = _package_fit(data, c2, warm_up, progress_bar=False)
        _, again, again_s = _package_fit(data, c2, warm_up, progress_bar=False)
        m, result, train_s = _package_fit(data, c2, max_iterations)
    t = time.perf_counter()
    predicted = []
    for b in data.test_packed:
        mb = ugm.UGM(ugm.models.chain_crf, features=b.features[0], mask=b.mask[0],
                     num_labels=len(nf.LABELS), num_features=data.index.num_attributes,
                     prior_scale=float(sigma_for(c2)))
        pred = ugm.predict(mb, result.params, {"features": b.features, "mask": b.mask},
                           "map", exact=True)
        predicted.append(np.asarray(pred.labels["y"]))
    predict_s = time.perf_counter() - t
    score = nf.entity_f1([[tag for *_, tag in s] for s in data.test],
                         nf.tags_of(data.test_packed, predicted))
    state, transitions = (np.asarray(result.params[k], np.float64) for k in ("W", "A"))
    state = np.concatenate([state, np.zeros((1, state.shape[1]))])  # the padding id's row
    extra = result.num_steps - again.num_steps
    iteration_s = (train_s - again_s) / extra if extra > 0 else train_s / max(
        result.num_steps, 1)
    return {"score": score, "train_s": train_s, "first_fit_s": first_s,
            "warm_up_steps": warm_up, "warm_up_again_s": again_s, "predict_s": predict_s,
            "iterations": result.num_steps, "median_iteration_s": iteration_s,
            "converged": result.converged,
            "objective_recomputed": map_objective(data.train_buckets, state, transitions,
                                                  c2)}


#: the fits this script runs, by name: function(data, c2, max_iterations) -> dict of
#: "score" (an ``nf.Score`` on esp.testb), "train_s", "iterations" and
#: "median_iteration_s"; the package's fit goes beside CRFsuite's
SIDES = {"crfsuite": crfsuite_side, "package": package_side}


def main(c2=0.1, max_iterations=100, only=None):
    names = [name for name in SIDES if only in (None, name)]
    if "crfsuite" in names and importlib.util.find_spec("pycrfsuite") is None:
        print("python-crfsuite is not installed: skipping its fit (pip install -e '.[bench]')")
        names.remove("crfsuite")
    if not names:
        return
    data = load_data()
    if data is None:
        return
    describe(data)
    print(f"c2 = {c2} (prior Normal(0, {sigma_for(c2):.4f}) on every weight), "
          f"max_iterations = {max_iterations}; load {os.getloadavg()}")
    for name in names:
        out = SIDES[name](data, c2, max_iterations)
        s = out["score"]
        print(f"{name}:\n" + "\n".join(f"  {key}: {value}" for key, value in out.items()))
        report(f"CoNLL-2002 esp.testb entity F1, {name}", f"{s.f1:.4f}",
               f"P {s.precision:.4f} R {s.recall:.4f}; c2={c2}, "
               f"{out['iterations']} L-BFGS iterations, training {out['train_s']:.1f} s")
        report(f"CoNLL-2002 training, {name}, s per L-BFGS iteration",
               f"{out['median_iteration_s']:.3f}",
               f"{out['iterations']} iterations; load {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--c2", type=float, default=0.1)
    parser.add_argument("--max-iterations", type=int, default=100)
    parser.add_argument("--only", choices=sorted(SIDES), default=None)
    args = parser.parse_args()
    main(args.c2, args.max_iterations, args.only)
