"""Shipped conformance targets: laplace-lab's own kernels and laplace-torch 0.3."""
