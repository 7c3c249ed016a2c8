"""Settings: hmbuild.toml and its precedence, the validation of what a user types, api.toml."""
