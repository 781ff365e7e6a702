"""The repository's own pytest setup.

The fixtures come from the installed ``schedgate`` plugin (``pip install -e .``
registers it through its ``pytest11`` entry point), exactly as they do for any
other repository that uses schedgate on its own scheduler.
"""

# pytester: the plugin's own behaviour is tested in pytest sessions of its own (tests/plugin/).
pytest_plugins = ("pytester",)
