"""The Metropolis kernel (kernels/metropolis.py). Its draws are checked against exact
enumeration beside Gibbs's in test_kernels_gibbs.py (``test_spin_vbm``,
``test_categorical_potts``) and test_kernels_base.py; here what is its own."""

from helpers import GIBBS, METROPOLIS, run_chains, vbm8


def test_metropolis_acceptance_is_reported():
    m, params = vbm8()
    *_, acceptance = run_chains(m, params, METROPOLIS, 20000, 60)
    assert 0.05 < acceptance < 0.95
    *_, acceptance = run_chains(m, params, GIBBS, 20000, 30)
    assert acceptance == 1.0
