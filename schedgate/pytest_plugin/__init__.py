"""schedgate as a pytest plugin: options, scenario files as items, fixtures, failure artifacts, figures.

The hooks are in :mod:`.hooks` (the ``pytest11`` entry point); the fixtures in :mod:`.fixtures`.
"""
