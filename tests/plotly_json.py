"""Reading a Plotly chart as the app sends it: arrays may come as typed-array JSON ({"bdata", "dtype", "shape"})."""

import base64

import numpy as np


def array(value) -> np.ndarray:
    """A figure's data array, decoded from Plotly's typed-array JSON when encoded."""
    if isinstance(value, dict):
        flat = np.frombuffer(base64.b64decode(value["bdata"]), dtype=value["dtype"])
        return flat.reshape([int(n) for n in value["shape"].split(",")]) if "shape" in value else flat
    return np.asarray(value)
