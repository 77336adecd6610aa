"""Optional dependencies: imported where a part needs them, with an error naming the
extra that installs them (``pip install 'numpyro_ugm[network]'``)."""

import importlib


def require(module: str, extra: str, purpose: str):
    """``module`` imported, or an ImportError saying that ``purpose`` needs it and which
    extra of numpyro_ugm installs it."""
    try:
        return importlib.import_module(module)
    except ImportError as error:
        raise ImportError(f"{purpose} needs {module.split('.')[0]}: pip install "
                          f"'numpyro_ugm[{extra}]'") from error
