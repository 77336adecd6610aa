"""Neural energies without a network library: the 2-D EBM of ebm_2d.py with its energy
network written by hand and its weights one plain pytree ``numpyro.param`` site, learned
beside ebm_2d's equinox network.

Setup:

* the data sets, the energy f(x) = 10 tanh(g(x) / 10) − |x|² / (2 · 3²), the learner
  (``ugm.MLE`` with Adam on a cosine schedule, minibatches of 200; ``--learner``, by
  default PCD with 5 MALA steps per update) and the evaluation (the exact test
  log-likelihood by ``ugm.quadrature.log_likelihood``) are ebm_2d.py's, imported from it;
* g, a 2 → 64 → 64 → 1 SiLU MLP, is :func:`mlp`, a few lines of ``jax.numpy``; its weights
  are one ``numpyro.param("net", layers)`` site holding a list of ``{"kernel", "bias"}``
  dicts (any pytree of float arrays will do: the learner optimizes every array, the
  parameter checks name the one of a wrong shape by its path, checkpoints store each);
* the weights start at those of ebm_2d's equinox MLP (the site's initial value; a
  callable ``numpyro.param("net", lambda key: ...)`` would draw them at
  ``m.init_params(key)``), and both networks are learned with the same keys:
  they compute the same function, so any difference in the learned test log-likelihood
  comes from the learner's chains (a MALA accept/reject decision turning last-bit
  differences into another chain path), not from the way the network is declared.

Outputs: the table on stdout (the base Normal fitted to the training data, the truth for
the 8 Gaussians, the pytree and the equinox network) and ``<out>/ebm_pytree.json``.

Run: ``python examples/ebm_pytree.py`` (all three data sets, 6000 steps) or ``--quick``
(8 Gaussians, 300 steps: about a minute on 2 CPU cores). Needs equinox (ebm_2d.py's
network, for the comparison).
"""

import jax
import numpyro
from ebm_2d import comparison_parser, compare, dense_layers, energy_model, equinox_model


def mlp(layers, x):
    """g(x): SiLU after every layer but the last, whose one output is returned."""
    for layer in layers[:-1]:
        x = jax.nn.silu(x @ layer["kernel"] + layer["bias"])
    last = layers[-1]
    return (x @ last["kernel"] + last["bias"])[..., 0]


def pytree_model(net):
    """The EBM with the hand-written network, its weights starting at those of the
    equinox MLP ``net`` (the site's initial value)."""
    start = [{"kernel": k, "bias": b} for k, b in dense_layers(net)]
    return energy_model(lambda x: mlp(numpyro.param("net", start), x)), None


if __name__ == "__main__":
    args = comparison_parser(__doc__.splitlines()[0]).parse_args()
    compare({"pytree": pytree_model, "equinox": equinox_model}, args, "ebm_pytree")
