"""The one exception type the CLI turns into a single sentence and a non-zero exit."""


class HmbuildError(Exception):
    """A failure the user can act on. The message is one sentence that says what to do next."""

    def __init__(self, message: str, exit_code: int = 1):
        super().__init__(message)
        self.exit_code = exit_code


def shown(value: str) -> str:
    """A user's value quoted for an error message: one line whatever it holds, and not too long."""
    return repr(value if len(value) <= 40 else value[:40] + "...")


def exit_reason(code: int) -> str:
    """A child's exit status in words: 'exit status 3', or the signal that ended it by name
    ('crashed with SIGSEGV (signal 11)'); subprocess reports a signal as a negative status."""
    import signal

    if code >= 0:
        return f"exit status {code}"
    try:
        name = signal.Signals(-code).name
    except ValueError:
        name = "an unknown signal"
    return f"crashed with {name} (signal {-code})"
