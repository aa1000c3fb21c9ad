"""Bounds on what a pack may contain, so a hostile or damaged pack costs little to reject.

A pack can come from anywhere and is loaded before anyone trusts it, so its size, and
what YAML aliases can make of it, is bounded. The numbers are documented in
docs/pack-format.md; each is far above what a real lesson needs (the largest built-in
lesson.yaml is about 23 KB, a few thousand values, nested 8 deep, with no aliases).
"""

# Any one file a pack loads: pack.yaml, lesson.yaml, or a .md/.py file they name.
MAX_FILE_BYTES = 256_000
# Values in one YAML file after aliases are expanded (a "billion laughs" stops here).
MAX_YAML_NODES = 50_000
# How deep mappings and lists may nest in one YAML file.
MAX_YAML_DEPTH = 20
# Uses of aliases (*name) in one YAML file.
MAX_YAML_ALIASES = 100
