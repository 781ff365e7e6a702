"""The JSON Schemas of scenario files and cluster definitions, for editors (``scenario.schema.json``,
``cluster.schema.json``): generated from the loader by :mod:`schedgate.scenarios.schema`
(``schedgate schema --write``), shipped so a file's editor header can point at them."""
