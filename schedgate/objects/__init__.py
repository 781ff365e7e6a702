"""Kubernetes objects as scenarios use them: immutable pod builders, live pod and namespace handles,
matchers, events and scheduler metrics."""
