"""The one error type the CLI turns into a message and a non-zero exit."""


class UserError(Exception):
    """Bad input or an unusable environment, described for the user."""
