"""A module file that needs a package this machine does not have (as Mamba2's need einops)."""

import a_package_nobody_installed  # noqa: F401
