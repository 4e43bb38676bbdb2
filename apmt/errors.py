"""The one exception type apmt raises for bad input: its message is a single line for the user."""


class ApmtError(Exception):
    """Bad input or an impossible request; the message names the file, field and value."""
