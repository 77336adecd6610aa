"""Sphinx configuration: markdown pages (MyST) and an API reference from the numpy-style
docstrings. Build: ``make docs`` (warnings are errors)."""

project = "numpyro_ugm"
author = "numpyro_ugm developers"
extensions = ["sphinx.ext.autodoc", "sphinx.ext.napoleon", "sphinx.ext.mathjax",
              "myst_parser"]
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "contents"
exclude_patterns = ["_build"]
napoleon_numpy_docstring = True
napoleon_google_docstring = False
napoleon_use_rtype = False
autodoc_member_order = "bysource"
autodoc_typehints = "none"
autodoc_default_options = {"members": True, "undoc-members": False}
myst_heading_anchors = 3
# ref.python: shape words in type fields ("(num_chains, num_samples, k)") are read as
# references, and some name two attributes; they are not references
suppress_warnings = ["myst.header", "ref.python"]
html_theme = "alabaster"
napoleon_use_ivar = True
