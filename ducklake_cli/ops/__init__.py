"""Operations: one module per command; each returns a dataclass the CLI renders."""
