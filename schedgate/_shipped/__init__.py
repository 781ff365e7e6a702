"""In an installed wheel: the files schedgate reads at run time (see :mod:`schedgate.spec.shipped`).
In a checkout they are the project's own top-level folders."""
