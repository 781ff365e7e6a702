"""What breaks things on purpose: a fault-injecting scheduler extender, and a proxy that slows, stalls or
cuts the scheduler's connection to the API server."""
