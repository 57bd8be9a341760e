"""Packages only: every other setting lives in pyproject.toml.

The repository keeps engine/, app/, tasks/ and themes/ at the top, but they install as
cuda_llm.engine, cuda_llm.app, cuda_llm.tasks and cuda_llm.themes, so that no other distribution's
top-level `engine` or `app` can shadow ours, or ours theirs. pyproject.toml cannot compute this
mapping (every task folder is a package of its own), so it is computed here.
"""

from setuptools import find_namespace_packages, setup

TOP_LEVEL = ("engine", "app", "tasks", "themes")
EXCLUDED = ("*__pycache__*",)

package_dir = {"cuda_llm": "cuda_llm"}
packages = ["cuda_llm"]
for top in TOP_LEVEL:
    package_dir[f"cuda_llm.{top}"] = top
    packages.append(f"cuda_llm.{top}")
    packages += [f"cuda_llm.{top}.{sub}" for sub in find_namespace_packages(top, exclude=EXCLUDED)]

setup(packages=packages, package_dir=package_dir)
