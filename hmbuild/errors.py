"""The one exception type the CLI turns into a single sentence and a non-zero exit."""


class HmbuildError(Exception):
    """A failure the user can act on. The message is one sentence that says what to do next."""

    def __init__(self, message: str, exit_code: int = 1):
        super().__init__(message)
        self.exit_code = exit_code
