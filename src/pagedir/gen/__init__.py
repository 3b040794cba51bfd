"""IR generators for pagedir-gen: each module has ``add_arguments(parser)`` and ``generate(args) -> str``."""

#: subcommand -> module under pagedir.gen
GENERATORS = {"attention": "attention", "copy-kv": "copy_kv", "linalg-attention": "linalg_attention"}
