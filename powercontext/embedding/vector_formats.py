"""A vector as the engines store it."""

from typing import Any


def to_sqlite_vec(vector: Any) -> bytes:
    """sqlite-vec's float32 BLOB: the values as little-endian IEEE 754 singles."""
    import numpy

    return numpy.asarray(vector, dtype="<f4").tobytes()


def to_oceanbase_vector(vector: Any) -> str:
    """OceanBase's VECTOR literal, ``[0.1,-0.2,...]``, each value with the 9 significant
    digits that give back the same float32."""
    import numpy

    values = numpy.asarray(vector, dtype=numpy.float32)
    return "[" + ",".join(format(float(value), ".9g") for value in values) + "]"
