"""Argument helpers shared by the command modules."""

def number(text):
    """argparse ``type`` that parses an int or a float but defers validation to the library.

    Text that is not a number is passed through unchanged, so the library's
    ``ParameterError`` -- which names the parameter, the value and what is
    allowed -- produces the message (exit code 2) instead of argparse's generic one.
    """
    try:
        return int(text)
    except ValueError:
        try:
            return float(text)
        except ValueError:
            return text
