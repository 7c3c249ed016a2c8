"""Generated projects: `new`, `update`/`check` and the CI templates."""
