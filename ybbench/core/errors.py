"""The one error type the CLI turns into a message and a non-zero exit."""


class UserError(Exception):
    """Bad input or an unusable environment, described for the user. Its
    exit code is 2 (usage), or the failing k6's own, passed through."""

    def __init__(self, message: str, exit_code: int = 2):
        super().__init__(message)
        self.exit_code = exit_code
