"""What users write, read and checked before anything starts: cluster definitions, scheduler
configurations, quantities, shipped defaults. Pure: no API, no processes."""
