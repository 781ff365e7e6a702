"""The design's vocabulary as builders: GPU inference pods, training pods, fillers (:mod:`.gpu`)."""
