"""Generated scenarios through the real scheduler (``schedgate fuzz``): :mod:`.generate`, :mod:`.run`."""
