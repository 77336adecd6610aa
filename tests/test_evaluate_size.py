"""The size guard of exact enumeration (evaluate/_size.py): every exact entry point
refuses, before compiling anything, an enumeration past ``max_configurations`` (naming
its size, its sites and the alternatives), warns above ``WARN_CONFIGURATIONS``, and
runs one the user allows by raising the limit (issue 46 item 22)."""

import itertools
import time
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import pytest

import numpyro_ugm as ugm
from numpyro_ugm.evaluate import _size, exact
from numpyro_ugm.evaluate._engine import check_size, make_plan


def test_a_gb_rbm_of_2_to_the_30_configurations_is_refused_at_once_by_every_entry_point():
    """Before: exact.log_partition of a GB-RBM 4 × 30 (2^30 configurations of the
    hiddens, the visibles integrated out) ran 755 s in one XLA call that Ctrl-C could
    not interrupt, with no word. Now each exact entry point refuses it within a second
    (once the model's structure and its checks are set up), saying how large it is, over
    which sites, and what to do; the issue's GB-RBM 64 × 16 (2^16 configurations with
    64 × 64 Hessians: about a second) stays quiet."""
    m = ugm.UGM(ugm.models.gaussian_rbm, 4, 30)
    params = m.init_params(jax.random.PRNGKey(0))
    m.target()  # the structure, analysed once (not part of the guard)
    data, key = {"v": np.zeros((5, 4))}, jax.random.PRNGKey(0)
    calls = {"log_partition": lambda: exact.log_partition(m, params),
             "log_likelihood": lambda: exact.log_likelihood(m, params, data),
             "log_prob": lambda: exact.log_prob(m, params, data),
             "marginals": lambda: exact.marginals(m, params),
             "moments": lambda: exact.moments(m, params),
             "exact.sample": lambda: exact.sample(m, params, key, 10),
             "exact.sampler": lambda: exact.sampler(m, 10),
             "fit_exact": lambda: ugm.fit_exact(m, data, progress_bar=False)}
    for owner, call in calls.items():
        with pytest.raises(ValueError) as error:
            call()  # the first call also sets up the parameters' check, the data's
        start = time.perf_counter()
        with pytest.raises(ValueError):
            call()
        assert time.perf_counter() - start < 1.0, owner
        message = str(error.value)
        assert message.startswith(f"{owner}: exact enumeration would take 1.074e+09 "
                                  "configurations (2^30.0) of 'h' (30 variables)"), message
        for part in ("the 4 real variables of ['v'] integrated out",
                     "more than max_configurations=67108864 (2^26.0)",
                     "Ctrl-C cannot interrupt", "ugm.ais.log_partition",
                     "pass max_configurations=1073741824 or more"):
            assert part in message, (owner, part)
    plan = make_plan(ugm.UGM(ugm.models.gaussian_rbm, 64, 16).target(), ("v", "h"))
    assert plan.num_configurations == 2 ** 16 and _size.work(plan) == 2 ** 20
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_size(plan, exact.DEFAULT_CHUNK_SIZE, "log_partition", _size.MAX_CONFIGURATIONS)


def spins(n):
    """``n`` fully coupled spins (nothing summed out: 2^n configurations), their
    colouring declared (no analysis)."""
    def model():
        x = numpyro.sample("x", ugm.Spin(n))
        J = numpyro.param("J", 0.1 * jnp.ones((n, n)))
        ugm.factor("pairs", x @ jnp.triu(J, 1) @ x + 0.2 * jnp.sum(x),
                   colors={"x": np.arange(n)}, multilinear=True)
    return model


def test_the_limit_is_a_keyword_a_large_enumeration_warns_and_2_to_the_20_passes(monkeypatch):
    """Thresholds from measured times (60-950 ns per configuration on a CPU: 2^22
    in 0.3-3 s): 2^20 passes quietly, above 2^24 warns, above 2^26 is refused. Raising
    ``max_configurations`` runs what it refused, to the brute-force value (numpy)."""
    assert (_size.WARN_CONFIGURATIONS, _size.MAX_CONFIGURATIONS) == (2 ** 24, 2 ** 26)
    m = ugm.UGM(spins(10))
    params = m.init_params(jax.random.PRNGKey(0))
    x = np.array(list(itertools.product([-1.0, 1.0], repeat=10)))
    J = np.triu(np.full((10, 10), 0.1), 1)
    truth = np.logaddexp.reduce(np.einsum("ni,ij,nj->n", x, J, x) + 0.2 * x.sum(1))
    with pytest.raises(ValueError, match=r"^log_partition: exact enumeration would take "
                       r"1024 configurations \(2\^10.0\) of 'x' \(10 variables\): 1024 in "
                       r"all \(2\^10.0\), more than max_configurations=512"):
        exact.log_partition(m, params, max_configurations=512)
    with pytest.raises(ValueError, match="max_configurations must be an integer"):
        exact.log_partition(m, params, max_configurations=1.5)
    monkeypatch.setattr(_size, "WARN_CONFIGURATIONS", 2 ** 9)  # this small model warns
    with pytest.warns(RuntimeWarning, match=r"^log_partition: exact enumeration of 1024 "
                      r"configurations .* Ctrl-C cannot interrupt"):
        value = exact.log_partition(m, params, max_configurations=1024)
    assert float(value) == pytest.approx(truth, rel=1e-6)
    monkeypatch.undo()
    for n, warns in ((20, False), (25, True)):
        plan = make_plan(ugm.UGM(spins(n)).target(), ("x",))
        assert plan.num_configurations == 2 ** n
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            check_size(plan, 2 ** 14, "log_partition", _size.MAX_CONFIGURATIONS)
        assert bool(caught) is warns, n
    with pytest.raises(ValueError, match="2\\^27.0"):
        check_size(make_plan(ugm.UGM(spins(27)).target(), ("x",)), 2 ** 14, "log_partition",
                   _size.MAX_CONFIGURATIONS)


def test_latent_sites_count_once_per_example():
    """log_likelihood enumerates the latent sites once per example: 2^16 latent
    configurations × 2^11 examples is 2^27, refused though log Z's 2^18 is not."""
    def model():
        v = numpyro.sample("v", ugm.Spin(2))
        h = numpyro.sample("h", ugm.Spin(16))
        J = numpyro.param("J", 0.1 * jnp.ones((16, 16)))
        numpyro.factor("f", h @ jnp.triu(J, 1) @ h + jnp.sum(v) * jnp.sum(h))

    m = ugm.UGM(model)
    params = m.init_params(jax.random.PRNGKey(0))
    data = {"v": np.ones((2 ** 11, 2), np.int8)}
    with pytest.raises(ValueError, match=r"^log_likelihood \(its latent sites\): exact "
                       r"enumeration would take 6.554e\+04 configurations \(2\^16.0\) of "
                       r"'h' \(16 variables\), once per example \(2048 examples\)"):
        exact.log_likelihood(m, params, data)
