"""API plumbing that knows nothing of schedgate: bounded reads, "ignore not found" and "create or keep",
the list-then-watch wait engine, and one poll helper for what has no watch."""
