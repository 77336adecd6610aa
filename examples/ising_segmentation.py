"""Example: Bayesian segmentation of a noisy binary image with an Ising prior, sampled by
NUTS-within-Gibbs.

The labels x ∈ {−1, +1}^(H×W) get an Ising prior (coupling β between 4-neighbours), the
pixels are y_ij ~ N(μ x_ij, σ), and the unknown noise scale σ gets a half-normal prior.
numpyro's ``HMCGibbs`` alternates NUTS on σ (given the labels) with a sweep of this
package's block Gibbs sampler over the labels (given σ), built by ``ugm.infer.gibbs_fn``:
the checkerboard blocks are found from the model itself. ``--composite gibbs`` runs the
same chain as ``numpyro.infer.Gibbs([(ugm.infer.UGMSampler(model), ["x"]),
(NUTS(model), None)])``.

Only σ is sampled by NUTS: the coupling β is fixed. A β sampled by NUTS would target
prior(β)·exp f(x; β) without the Ising model's 1/Z(β), a wrong posterior (the adapters
warn); learn β by MAP with ``ugm.MLE`` instead.

The likelihood is written as a mixture over the two labels,
(1 + x)/2 · log N(y | μ, σ) + (1 − x)/2 · log N(y | −μ, σ), which equals log N(y | μ x, σ)
on the domain and is linear in x, so that the conditionals of all pixels of one colour come
from one gradient. (``numpyro.sample("y", dist.Normal(mu * x, sigma), obs=y)`` is correct
too, ``--likelihood normal``, but its x² term is not multilinear: the sampler then uses
exact conditionals and, above 512 pixels, one pixel per block.)

Prints the posterior mean of σ against the true σ, and the pixel error of the posterior
marginal segmentation (each pixel's most probable label) against thresholding the noisy
image at 0; saves ``outputs/ising_segmentation.png``.
Run: ``python examples/ising_segmentation.py`` (about a minute on a laptop CPU).
"""

import argparse
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
from numpyro.infer import MCMC, NUTS, Gibbs, HMCGibbs

import numpyro_ugm as ugm


def synthetic_image(size=24, seed=0):
    """A ±1 label image: a disk and a bar on a background."""
    i, j = np.mgrid[:size, :size] / size
    disk = (i - 0.35) ** 2 + (j - 0.35) ** 2 < 0.2 ** 2
    bar = (np.abs(i - 0.72) < 0.1) & (j > 0.3) & (j < 0.9)
    return np.where(disk | bar, 1.0, -1.0).astype(np.float32)


def segmentation(y, coupling=0.6, mu=1.0, likelihood="mixture"):
    """Ising prior over labels x (site ``"x"``), Gaussian pixels with noise scale σ."""
    sigma = numpyro.sample("sigma", dist.HalfNormal(2.0))
    x = numpyro.sample("x", ugm.Spin(y.shape))
    numpyro.factor("ising", coupling * (jnp.sum(x[1:] * x[:-1]) + jnp.sum(x[:, 1:] * x[:, :-1])))
    if likelihood == "mixture":
        up = dist.Normal(mu, sigma).log_prob(y)
        down = dist.Normal(-mu, sigma).log_prob(y)
        numpyro.factor("likelihood", jnp.sum(0.5 * (1 + x) * up + 0.5 * (1 - x) * down))
    else:
        numpyro.sample("y", dist.Normal(mu * x, sigma), obs=y)


def main(size=24, true_sigma=1.0, coupling=0.6, num_warmup=300, num_samples=1000,
         composite="hmcgibbs", likelihood="mixture", seed=0, out="outputs"):
    truth = synthetic_image(size)
    rng = np.random.default_rng(seed)
    y = (truth + true_sigma * rng.standard_normal(truth.shape)).astype(np.float32)
    args = (jnp.asarray(y), coupling, 1.0, likelihood)

    # the mixture factor is the likelihood of the pixels (normalized over y): NUTS may
    # sample the sigma it depends on (a factor coupling the labels with a sampled
    # parameter of their prior, such as the coupling, would draw a warning)
    likelihood_factors = ["likelihood"] if likelihood == "mixture" else []
    t = time.perf_counter()
    if composite == "hmcgibbs":
        fn = ugm.infer.gibbs_fn(segmentation, *args, likelihood_factors=likelihood_factors)
        print(f"blocks found: {len(fn.ugm.target().blocks)} (multilinear: "
              f"{fn.ugm.target().structure.multilinear})")
        kernel = HMCGibbs(NUTS(segmentation), gibbs_fn=fn, gibbs_sites=fn.sites)
    else:
        kernel = Gibbs([(ugm.infer.UGMSampler(segmentation,
                                              likelihood_factors=likelihood_factors), ["x"]),
                        (NUTS(segmentation), None)])
    mcmc = MCMC(kernel, num_warmup=num_warmup, num_samples=num_samples, progress_bar=False)
    mcmc.run(jax.random.PRNGKey(seed), *args)
    samples = mcmc.get_samples()
    sigma = np.asarray(samples["sigma"])
    x = np.asarray(samples["x"])  # model representation: floats ±1
    elapsed = time.perf_counter() - t

    p_up = (1 + x.mean(0)) / 2                   # posterior marginals P(x_ij = +1 | y)
    marginal = np.where(p_up > 0.5, 1.0, -1.0)    # most probable label per pixel
    threshold = np.where(y > 0, 1.0, -1.0)
    err_post = float(np.mean(marginal != truth))
    err_thr = float(np.mean(threshold != truth))
    print(f"{composite} ({likelihood} likelihood), {size}x{size} image, {num_warmup} warmup + "
          f"{num_samples} samples in {elapsed:.1f} s")
    print(f"sigma: posterior mean {sigma.mean():.3f} (sd {sigma.std():.3f}), "
          f"true {true_sigma:.3f}")
    print(f"pixel error: posterior marginals {err_post:.2%}, threshold at 0 {err_thr:.2%}")

    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:  # pragma: no cover
        print("matplotlib not installed: no figure")
        return sigma, p_up
    fig, axes = plt.subplots(1, 5, figsize=(16, 3.4))
    panels = [(truth, "true labels", -1), (y, f"noisy image (σ = {true_sigma:g})", None),
              (threshold, f"threshold at 0: {err_thr:.1%} wrong", -1),
              (p_up, f"P(x = +1 | y): {err_post:.1%} wrong", 0)]
    for ax, (img, title, low) in zip(axes, panels):
        ax.imshow(img, cmap="gray", vmin=low, vmax=None if low is None else 1)
        ax.set_title(title, fontsize=10)
        ax.set_xticks([]), ax.set_yticks([])
    axes[4].hist(sigma, bins=40, color="0.5")
    axes[4].axvline(true_sigma, color="k", ls="--", label="true σ")
    axes[4].set_title(f"posterior of σ: mean {sigma.mean():.3f}", fontsize=10)
    axes[4].legend(fontsize=8)
    fig.tight_layout()
    path = Path(out)
    path.mkdir(parents=True, exist_ok=True)
    fig.savefig(path / "ising_segmentation.png", dpi=110)
    print(f"saved {path / 'ising_segmentation.png'}")
    return sigma, p_up


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=24)
    parser.add_argument("--sigma", type=float, default=1.0, help="true noise scale")
    parser.add_argument("--coupling", type=float, default=0.6, help="Ising coupling β")
    parser.add_argument("--num-warmup", type=int, default=300)
    parser.add_argument("--num-samples", type=int, default=1000)
    parser.add_argument("--composite", choices=["hmcgibbs", "gibbs"], default="hmcgibbs")
    parser.add_argument("--likelihood", choices=["mixture", "normal"], default="mixture")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default="outputs")
    a = parser.parse_args()
    main(a.size, a.sigma, a.coupling, a.num_warmup, a.num_samples, a.composite, a.likelihood,
         a.seed, a.out)
