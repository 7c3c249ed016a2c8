"""Generated CI definitions (issue 8): the project's CI file for GitHub Actions or GitLab CI.

`ci_files(context)` returns {relative path: text} for the provider the project was generated
with (context["ci"]: "github", "gitlab" or "none"); `hmbuild new` writes them with the rest of
the project and records them like any other generated file.
"""

from __future__ import annotations

PROVIDERS = ("github", "gitlab", "none")


def ci_files(context: dict) -> dict[str, str]:
    return {}
